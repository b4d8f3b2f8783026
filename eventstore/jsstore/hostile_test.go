package jsstore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// forged is a message published around the store, as a buggy service or a
// hand-typed `nats pub` could.
type forged struct {
	version      uint64 // the document's version and, unless header is set, Amends-Version
	header       string // Amends-Version if not empty
	first, prevs string // Amends-First-Seq and Amends-Prev-Seqs, omitted if empty
	doc          *eventstore.Stream
}

// forge publishes f on a's subject of st's stream with a raw JetStream
// publish and returns its sequence. The document is a's (or f.doc's)
// stream at f.version.
func forge(tb testing.TB, st *jsstore.Store, js jetstream.JetStream, a eventstore.AggregateID, f forged) uint64 {
	tb.Helper()
	require.NoError(tb, st.Provision(tb.Context(), a.Context))
	doc := newStream(a, "step", map[string]string{"forged": "yes"})
	if f.doc != nil {
		doc = *f.doc
	}
	doc.Version = f.version
	data, err := eventstore.Encode(&doc)
	require.NoError(tb, err)
	subj, err := st.Subject(a)
	require.NoError(tb, err)
	msg := nats.NewMsg(subj)
	msg.Data = data
	h := f.header
	if h == "" {
		h = strconv.FormatUint(f.version, 10)
	}
	msg.Header.Set(jsstore.HeaderVersion, h)
	if f.first != "" {
		msg.Header.Set(jsstore.HeaderFirstSeq, f.first)
	}
	if f.prevs != "" {
		msg.Header.Set(jsstore.HeaderPrevSeqs, f.prevs)
	}
	ack, err := js.PublishMsg(tb.Context(), msg)
	require.NoError(tb, err)
	return ack.Sequence
}

// Finding 1 of issue 11: a version read from a message sized an
// allocation (10^12 → out of memory, 2^64-1 → makeslice panic).
func TestForgedHugeVersionIsCorrupt(t *testing.T) {
	for name, version := range map[string]uint64{"10^12": 1_000_000_000_000, "2^64-1": 1<<64 - 1} {
		t.Run(name, func(t *testing.T) {
			st, js, _ := newStore(t)
			a := order("huge")
			appendN(t, st, order("noise"), 0, 2) // the forged message is not the stream's first
			seq := forge(t, st, js, a, forged{version: version, first: "1", prevs: "1"})
			_, err := st.Load(t.Context(), a, 1)
			require.ErrorIs(t, err, eventstore.ErrCorrupt)
			assert.ErrorContains(t, err, "message "+strconv.FormatUint(seq, 10)+" on amends.orders.order.huge")
			assert.ErrorContains(t, err, jsstore.HeaderVersion)
			_, err = st.LoadVersion(t.Context(), a, 1)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadVersion")
			_, err = st.LoadLast(t.Context(), a)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadLast")
		})
	}
}

// prevsOf lists the sequences of ss newest first, as HeaderPrevSeqs does.
func prevsOf(ss []eventstore.Stream) string {
	var out []string
	for i := len(ss) - 1; i >= 0 && len(out) < 16; i-- {
		out = append(out, strconv.FormatUint(ss[i].Seq, 10))
	}
	return strings.Join(out, ",")
}

// Position headers that contradict where the message is stored are
// corrupt, whatever reads them, and the error names the message and header.
func TestInconsistentPositionHeadersAreCorrupt(t *testing.T) {
	st, js, _ := newStore(t)
	noise := appendN(t, st, order("noise"), 0, 3) // sequences 1 to 3
	for name, tc := range map[string]struct {
		f    forged
		want string
	}{
		"version beyond the sequences": {forged{version: 1000, first: "1", prevs: "3,2,1"}, "Amends-Version 1000, more than the"},
		"first after the message":      {forged{version: 2, first: "99", prevs: "3"}, jsstore.HeaderFirstSeq},
		"first sequence 0":             {forged{version: 2, first: "0", prevs: "3"}, jsstore.HeaderFirstSeq},
		"no previous sequences":        {forged{version: 2, first: "1"}, jsstore.HeaderPrevSeqs},
		"previous sequences increase":  {forged{version: 3, first: "1", prevs: "1,3"}, jsstore.HeaderPrevSeqs},
		"previous before the first":    {forged{version: 2, first: "2", prevs: "1"}, jsstore.HeaderPrevSeqs},
		"too many previous sequences":  {forged{version: 2, first: "1", prevs: "3,1"}, jsstore.HeaderPrevSeqs},
		"oldest previous is not first": {forged{version: 2, first: "1", prevs: "3"}, jsstore.HeaderPrevSeqs},
		"version header not a number":  {forged{version: 1, header: "1e3"}, jsstore.HeaderVersion},
		"version header beyond uint64": {forged{version: 1, header: "18446744073709551616"}, jsstore.HeaderVersion},
		"version header differs":       {forged{version: 1, header: "2", first: "1", prevs: "1"}, "on amends.orders.order.noise"},
	} {
		t.Run(name, func(t *testing.T) {
			a := order(strings.ReplaceAll(name, " ", "-"))
			seq := forge(t, st, js, a, tc.f)
			subj, _ := st.Subject(a)
			_, err := st.Load(t.Context(), a, 1)
			require.ErrorIs(t, err, eventstore.ErrCorrupt, "Load")
			assert.ErrorContains(t, err, subj)
			assert.ErrorContains(t, err, tc.want)
			_, err = st.LoadVersion(t.Context(), a, 1)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadVersion")
			_, err = st.LoadLast(t.Context(), a)
			require.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadLast")
			assert.ErrorContains(t, err, "message "+strconv.FormatUint(seq, 10)+" on "+subj, "LoadLast names the message")
			if tc.f.header == "" {
				_, err = st.Append(t.Context(), newStream(a, "step", 1), tc.f.version)
				assert.ErrorIs(t, err, eventstore.ErrCorrupt, "Append after it")
			}
		})
	}
	got, err := st.Load(t.Context(), order("noise"), 1)
	require.NoError(t, err)
	assert.Equal(t, noise, got, "the genuine aggregate still loads")
}

// Finding 4 of issue 11: a forged v6 of B listing A's sequences made B's
// history be A's. Every message read by sequence must be the aggregate's.
func TestForgedPointersIntoAnotherAggregateAreCorrupt(t *testing.T) {
	for name, long := range map[string]bool{"direct gets": false, "walk": true} {
		t.Run(name, func(t *testing.T) {
			st, js, _ := newStore(t)
			a, b := order("A"), order("B")
			n := uint64(5)
			if long {
				n = 40 // beyond the previous sequences a message lists
			}
			histA := appendN(t, st, a, 0, n)
			appendN(t, st, b, 0, n)
			seq := forge(t, st, js, b, forged{version: n + 1, first: strconv.FormatUint(histA[0].Seq, 10), prevs: prevsOf(histA)})

			_, err := st.Load(t.Context(), b, 1)
			require.ErrorIs(t, err, eventstore.ErrCorrupt, "B's history must not be A's")
			if !long {
				assert.ErrorContains(t, err, "amends.orders.order.A", "names what it found")
			}
			for _, v := range []uint64{1, n - 1, n} {
				_, err = st.LoadVersion(t.Context(), b, v)
				assert.ErrorIs(t, err, eventstore.ErrCorrupt, "B version %d must not be A's", v)
			}
			last, err := st.LoadLast(t.Context(), b)
			require.NoError(t, err, "the last message alone is consistent")
			assert.Equal(t, seq, last.Seq)

			got, err := st.Load(t.Context(), a, 1)
			require.NoError(t, err)
			assert.Equal(t, histA, got, "A is untouched")
		})
	}
}

// A forged stream whose previous sequences are the aggregate's own but
// out of order, or whose version skips one, is corrupt.
func TestForgedPointersIntoTheAggregateItselfAreChecked(t *testing.T) {
	st, js, _ := newStore(t)
	a := order("self")
	hist := appendN(t, st, a, 0, 30)
	appendN(t, st, order("noise"), 0, 30)
	first := strconv.FormatUint(hist[0].Seq, 10)

	// v31 listing v30's sequence twice over v29's: version 30 at v29's place.
	swapped := prevsOf(hist)
	parts := strings.Split(swapped, ",")
	parts[0], parts[1] = parts[1], parts[0]
	forge(t, st, js, a, forged{version: 31, first: first, prevs: strings.Join(parts, ",")})
	_, err := st.Load(t.Context(), a, 20)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "previous sequences out of order")

	// v32 listing v29 down to v14: each is one version off.
	forge(t, st, js, a, forged{version: 32, first: first, prevs: prevsOf(hist[:29])})
	_, err = st.Load(t.Context(), a, 20)
	require.ErrorIs(t, err, eventstore.ErrCorrupt, "previous sequences one version off")
	assert.ErrorContains(t, err, "not version 20")
	_, err = st.LoadVersion(t.Context(), a, 31)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadVersion one version off")

	// v40 after v20: version 21 is missing from the walk.
	b := order("skip")
	histB := appendN(t, st, b, 0, 20)
	appendN(t, st, order("noise-2"), 0, 30)
	forge(t, st, js, b, forged{version: 40, first: strconv.FormatUint(histB[0].Seq, 10), prevs: prevsOf(histB)})
	_, err = st.Load(t.Context(), b, 1)
	require.ErrorIs(t, err, eventstore.ErrCorrupt, "a version is missing")
	assert.ErrorContains(t, err, "version 21")
	_, err = st.LoadVersion(t.Context(), b, 25)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadVersion walking past the gap")
	_, err = st.LoadVersion(t.Context(), b, 39)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadVersion by a previous sequence")
	got, err := st.LoadVersion(t.Context(), b, 3)
	require.NoError(t, err, "a genuine version before the gap still loads")
	assert.Equal(t, histB[2], got)
}

// LoadAt reads the history as of one stream, so what was appended after it
// (a forged tail here) does not matter, and it refuses a sequence that is
// not the aggregate's.
func TestLoadAtReadsTheHistoryAsOfAStream(t *testing.T) {
	st, js, _ := newStore(t)
	a := order("at")
	hist := make([]eventstore.Stream, 0, 30)
	for v := uint64(0); v < 30; v++ {
		hist = append(hist, appendN(t, st, a, v, 1)...)
		appendN(t, st, order("noise"), v, 1)
	}
	forge(t, st, js, a, forged{version: 1000, first: strconv.FormatUint(hist[0].Seq, 10), prevs: prevsOf(hist)})
	_, err := st.Load(t.Context(), a, 1)
	require.ErrorIs(t, err, eventstore.ErrCorrupt, "the forged tail spoils the latest history")

	for _, tc := range []struct{ from, at uint64 }{{1, 1}, {1, 10}, {1, 17}, {1, 18}, {1, 30}, {5, 10}, {20, 30}, {31, 30}} {
		got, err := st.LoadAt(t.Context(), a, tc.from, hist[tc.at-1].Seq)
		require.NoError(t, err, "from %d at version %d", tc.from, tc.at)
		if tc.from > tc.at {
			assert.Empty(t, got)
			continue
		}
		assert.Equal(t, hist[tc.from-1:tc.at], got, "from %d at version %d", tc.from, tc.at)
	}
	noise, err := st.LoadLast(t.Context(), order("noise"))
	require.NoError(t, err)
	_, err = st.LoadAt(t.Context(), a, 1, noise.Seq)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "a sequence of another aggregate")
	_, err = st.LoadAt(t.Context(), a, 1, 1<<40)
	assert.ErrorIs(t, err, eventstore.ErrNotFound, "a sequence past the stream")
	_, err = st.LoadAt(t.Context(), a, 1, 0)
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "sequence 0")
}
