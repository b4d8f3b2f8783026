package jsstore_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// maxAllocPerInput bounds what the reads of one fuzzed message may
// allocate, the in-process server's work included.
const maxAllocPerInput = 64 << 20

// waitLimit bounds a wait for something that normally takes milliseconds.
const waitLimit = 30 * time.Second

// Fuzz input modes: the low two bits are how many genuine versions the
// aggregate gets before the fuzzed message.
const (
	modeOwnPositions     = 1 << 2 // first/prevs headers are the aggregate's own (consistent)
	modeForeignPositions = 1 << 3 // first/prevs headers are another aggregate's
)

// FuzzDecodeAndLoad publishes one message with fuzzed position headers and
// body (or a valid document at a fuzzed version when body is empty) on an
// aggregate's subject of a real in-process JetStream shared by the fuzz
// process, then reads it back with every read: DecodeMsg (through a
// consumer), LoadLast, LoadLastIfChanged, Load, LoadAt and LoadVersion. Each read
// must succeed with a consistent result or fail as eventstore.ErrCorrupt, ErrInvalid
// or ErrNotFound; none may panic or allocate more than maxAllocPerInput.
func FuzzDecodeAndLoad(f *testing.F) {
	huge := strconv.FormatUint(1<<64-1, 10)
	for _, s := range []struct {
		version, first, prevs string
		docVersion            uint64
		body                  []byte
		mode                  uint8
	}{
		// Issue 11, finding 1: versions that sized allocations.
		{"1000000000000", "1", "1", 1_000_000_000_000, nil, 0},
		{huge, "1", "1", 1<<64 - 1, nil, 0},
		{huge, "1", "1", 1<<64 - 1, nil, 2 | modeOwnPositions},
		{"1000000000000", "", "", 1_000_000_000_000, nil, 3 | modeOwnPositions},
		// Issue 11, finding 4: pointers into another aggregate.
		{"6", "", "", 6, nil, modeForeignPositions},
		{"21", "", "", 21, nil, 3 | modeForeignPositions},
		// Genuine shapes and small corruptions of them.
		{"1", "", "", 1, nil, 0},
		{"4", "", "", 4, nil, 3 | modeOwnPositions},
		{"5", "", "", 4, nil, 3 | modeOwnPositions},
		{"3", "", "", 3, nil, 3 | modeOwnPositions},
		{"2", "99999", "1", 2, nil, 1},
		{"3", "1", "5,1", 3, nil, 1},
		{"2", "1", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", 2, nil, 1},
		{"x", "", "", 1, []byte(`{not json`), 0},
		{"1", "", "", 1, []byte(`{"id":"s","aggregate":{"context":"orders","type":"fz","id":"nope"},"version":1,"createTime":1,"events":[{"id":"e","name":"n","body":{}}]}`), 0},
	} {
		f.Add(s.version, s.first, s.prevs, s.docVersion, s.body, s.mode)
	}

	st, js, _ := newStore(f)
	ctx := f.Context()
	// A genuine aggregate with a history longer than the previous-sequence
	// list, spread through the stream.
	foreign := appendN(f, st, order("foreign"), 0, 1)
	for v := uint64(1); v < 24; v++ {
		appendN(f, st, order("noise"), v-1, 1)
		foreign = append(foreign, appendN(f, st, order("foreign"), v, 1)...)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, st.StreamName("orders"), jetstream.ConsumerConfig{
		Durable: "fuzz", FilterSubject: st.FilterSubject("orders", "fz"), AckPolicy: jetstream.AckExplicitPolicy,
	})
	require.NoError(f, err)
	var n atomic.Uint64

	f.Fuzz(func(t *testing.T, version, first, prevs string, docVersion uint64, body []byte, mode uint8) {
		for _, h := range []string{version, first, prevs} {
			if len(h) > 512 || strings.ContainsFunc(h, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Skip("not a header value NATS can carry")
			}
		}
		if len(body) > 64<<10 {
			t.Skip("larger than a message")
		}
		a := eventstore.AggregateID{Context: "orders", Type: "fz", ID: "a" + strconv.FormatUint(n.Add(1), 10)}
		own := appendN(t, st, a, 0, uint64(mode&3))
		switch {
		case mode&modeOwnPositions != 0 && len(own) > 0:
			first, prevs = strconv.FormatUint(own[0].Seq, 10), prevsOf(own)
		case mode&modeForeignPositions != 0:
			first, prevs = strconv.FormatUint(foreign[0].Seq, 10), prevsOf(foreign)
		}
		if len(body) == 0 {
			doc := newStream(a, "step", map[string]string{"fuzzed": "yes"})
			doc.Version = max(docVersion, 1)
			body, err = eventstore.Encode(&doc)
			require.NoError(t, err)
		}
		subj, err := st.Subject(a)
		require.NoError(t, err)
		msg := nats.NewMsg(subj)
		msg.Data = body
		for k, v := range map[string]string{jsstore.HeaderVersion: version, jsstore.HeaderFirstSeq: first, jsstore.HeaderPrevSeqs: prevs} {
			if v != "" {
				msg.Header.Set(k, v)
			}
		}
		ack, err := js.PublishMsg(ctx, msg)
		require.NoError(t, err)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		reads(t, st, cons, a, ack.Sequence)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > maxAllocPerInput {
			t.Fatalf("reading one message allocated %d bytes, more than %d", d, maxAllocPerInput)
		}
	})
}

// reads reads a, whose last message is at seq, with every read and checks
// each outcome.
func reads(t *testing.T, st *jsstore.Store, cons jetstream.Consumer, a eventstore.AggregateID, seq uint64) {
	t.Helper()
	ctx := t.Context()
	terminal := func(what string, err error) bool {
		t.Helper()
		if err == nil {
			return false
		}
		if !errors.Is(err, eventstore.ErrCorrupt) && !errors.Is(err, eventstore.ErrInvalid) && !errors.Is(err, eventstore.ErrNotFound) {
			t.Fatalf("%s: neither a result nor a terminal error: %v", what, err)
		}
		return true
	}
	deadline := time.Now().Add(waitLimit)
	for done := false; !done; {
		require.True(t, time.Now().Before(deadline), "message %d not delivered within %s", seq, waitLimit)
		batch, err := cons.FetchNoWait(16)
		require.NoError(t, err)
		for m := range batch.Messages() {
			md, err := m.Metadata()
			require.NoError(t, err)
			got, err := st.DecodeMsg(m)
			if !terminal("DecodeMsg", err) {
				require.Equal(t, md.Sequence.Stream, got.Seq, "DecodeMsg sets the sequence")
			}
			require.NoError(t, m.Ack())
			done = done || md.Sequence.Stream >= seq
		}
		require.NoError(t, batch.Error())
	}

	last, err := st.LoadLast(ctx, a)
	lastOK := !terminal("LoadLast", err)
	if lastOK {
		require.Equal(t, seq, last.Seq)
		require.Equal(t, a, last.Aggregate)
	}
	_, _, err = st.LoadLastIfChanged(ctx, a, 0)
	require.Equal(t, lastOK, !terminal("LoadLastIfChanged", err), "LoadLastIfChanged agrees with LoadLast")

	hist, err := st.Load(ctx, a, 1)
	histOK := !terminal("Load", err)
	at, err := st.LoadAt(ctx, a, 1, seq)
	require.Equal(t, histOK, !terminal("LoadAt", err), "LoadAt at the last sequence agrees with Load")
	if histOK {
		require.Equal(t, hist, at, "LoadAt at the last sequence is Load")
	}
	if histOK {
		require.True(t, lastOK, "a history loads only if its last stream does")
		require.NotEmpty(t, hist)
		for i, s := range hist {
			require.Equal(t, uint64(i+1), s.Version, "versions from 1 in order")
			require.Equal(t, a, s.Aggregate, "every stream is the aggregate's")
		}
		require.Equal(t, last, hist[len(hist)-1], "the history ends with the last stream")
	}
	if lastOK {
		for _, v := range []uint64{1, last.Version / 2, last.Version - 1, last.Version} {
			if v == 0 {
				continue
			}
			got, err := st.LoadVersion(ctx, a, v)
			if !terminal("LoadVersion", err) {
				require.Equal(t, v, got.Version)
				require.Equal(t, a, got.Aggregate)
			}
		}
	}
}
