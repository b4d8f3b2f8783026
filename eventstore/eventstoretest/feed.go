package eventstoretest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

// checkProvision: provisioning is repeatable, refuses invalid names, and
// the feed names each context's log and each type's part apart.
func checkProvision[M any](t *testing.T, h Harness[M]) {
	s := h.Store
	require.NoError(t, s.Provision(ctx(t), suiteContext, "other"))
	require.NoError(t, s.Provision(ctx(t), suiteContext), "provisioning again")
	require.ErrorIs(t, s.Provision(ctx(t), "no spaces"), eventstore.ErrInvalid, "an invalid context name")
	assert.NotEmpty(t, s.StreamName(suiteContext))
	assert.NotEqual(t, s.StreamName(suiteContext), s.StreamName("other"), "each context has its own log")
	all, one, two := s.FilterSubject(suiteContext, ""), s.FilterSubject(suiteContext, typeA), s.FilterSubject(suiteContext, typeB)
	assert.NotEmpty(t, all)
	assert.NotEqual(t, all, one, "a type's filter is not the context's")
	assert.NotEqual(t, one, two, "each type has its own filter")
	assert.NotEqual(t, all, s.FilterSubject("other", ""), "each context has its own filter")
	assert.GreaterOrEqual(t, s.Replicas(), 1, "a store keeps at least one copy")
}

// checkSubscribe: a subscriber that starts at a position receives the
// log from there, and DecodeMsg gives back the streams as appended.
func checkSubscribe[M any](t *testing.T, h Harness[M]) {
	s := h.Store
	a, b := agg(typeA, "sub-a"), agg(typeB, "sub-b")
	var log, bs []eventstore.Stream
	for v := range uint64(3) {
		log = append(log, appendN(t, s, a, v, 1)...)
		nb := appendN(t, s, b, v, 1)
		log, bs = append(log, nb...), append(bs, nb...)
	}
	sa, err := s.Subject(a)
	require.NoError(t, err)
	sb, err := s.Subject(b)
	require.NoError(t, err)
	assert.NotEqual(t, sa, sb, "each aggregate has its own subject")
	again, err := s.Subject(a)
	require.NoError(t, err)
	assert.Equal(t, sa, again, "an aggregate's subject does not change")
	_, err = s.Subject(eventstore.AggregateID{Context: suiteContext, Type: typeA})
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "the subject of an aggregate without an id")
	if h.SubjectOf != nil {
		for i, m := range deliverMsgs(t, h, "", log[0].Seq, len(log)) {
			want := sa
			if log[i].Aggregate == b {
				want = sb
			}
			assert.Equal(t, want, h.SubjectOf(m), "message %d carries its aggregate's Subject", i)
		}
	}
	for _, c := range []struct {
		name, typ string
		from      uint64
		want      []eventstore.Stream
	}{
		{"the whole log", "", log[0].Seq, log},
		{"from the third stream", "", log[2].Seq, log[2:]},
		{"one type's streams", typeB, log[0].Seq, bs},
		{"one type's from a position between them", typeB, log[2].Seq, bs[1:]},
	} {
		got := deliver(t, h, c.typ, c.from, len(c.want))
		assert.Equal(t, c.want, got, "%s: DecodeMsg gives the streams as appended, with Seq and PrevSeq", c.name)
	}
}

// deliver subscribes from a position and decodes what arrives.
func deliver[M any](t *testing.T, h Harness[M], typ string, from uint64, n int) []eventstore.Stream {
	t.Helper()
	out := make([]eventstore.Stream, n)
	for i, m := range deliverMsgs(t, h, typ, from, n) {
		var err error
		out[i], err = h.Store.DecodeMsg(m)
		require.NoError(t, err, "decode message %d", i)
	}
	return out
}

// deliverMsgs subscribes from a position and returns what arrives.
func deliverMsgs[M any](t *testing.T, h Harness[M], typ string, from uint64, n int) []M {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	msgs, err := h.Subscribe(c, suiteContext, typ, from, n)
	require.NoError(t, err, "subscribe to %q from %d", typ, from)
	require.Len(t, msgs, n, "the subscriber receives %d messages from %d", n, from)
	return msgs
}

// checkCorrupt: values the store did not write fail every read with
// ErrCorrupt, never a panic, and leave the rest of the log readable.
func checkCorrupt[M any](t *testing.T, h Harness[M]) {
	if h.WriteRaw == nil {
		t.Skip("the harness cannot write raw values")
	}
	s := h.Store
	foreign := stream(t, agg(typeB, "someone-else"), 1)
	foreign.Version = 1
	doc, err := eventstore.Encode(&foreign)
	require.NoError(t, err)
	depth := 100_000 // a recursive decoder's stack
	if h.MaxStreamBytes > 0 {
		depth = min(depth, h.MaxStreamBytes/2)
	}
	for name, data := range map[string][]byte{
		"not JSON":                  []byte("not json"),
		"empty":                     {},
		"truncated":                 doc[:len(doc)/2],
		"an array":                  []byte("[]"),
		"deeply nested":             []byte(strings.Repeat("[", depth)),
		"another aggregate's":       doc,
		"a number where ids belong": []byte(`{"id":1e999999,"aggregate":{"contextName":7}}`),
	} {
		t.Run(name, func(t *testing.T) {
			a := agg(typeA, "corrupt-"+strings.ReplaceAll(name, " ", "-"))
			seq, err := h.WriteRaw(ctx(t), a, data)
			require.NoError(t, err)
			_, err = s.LoadLast(ctx(t), a)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadLast")
			_, err = s.Load(ctx(t), a, 1)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "Load")
			_, err = s.LoadVersion(ctx(t), a, 1)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadVersion")
			_, err = s.GetSeq(ctx(t), suiteContext, seq)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "GetSeq")
			_, err = s.LoadAt(ctx(t), a, 1, seq)
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadAt")
			c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			msgs, err := h.Subscribe(c, suiteContext, typeA, seq, 1)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			_, err = s.DecodeMsg(msgs[0])
			assert.ErrorIs(t, err, eventstore.ErrCorrupt, "DecodeMsg")
			assert.Contains(t, err.Error(), strconv.FormatUint(seq, 10), "the error names the sequence")
		})
	}

	// After a corrupt message: an aggregate whose last message is corrupt
	// takes no append, the log goes on.
	a := agg(typeA, "corrupt-after-history")
	hist := appendN(t, s, a, 0, 1)
	bad, err := h.WriteRaw(ctx(t), a, []byte("garbage"))
	require.NoError(t, err)
	_, err = s.LoadLast(ctx(t), a)
	assert.ErrorIs(t, err, eventstore.ErrCorrupt, "LoadLast of a history whose last message is corrupt")
	_, err = s.Append(ctx(t), stream(t, a, 2), 1)
	assert.Error(t, err, "no append after a corrupt last message")
	at, err := s.LoadAt(ctx(t), a, 1, hist[0].Seq)
	require.NoError(t, err, "the history as of its last good stream still reads")
	assert.Equal(t, hist, at)
	next := appendN(t, s, agg(typeA, "after-corrupt"), 0, 1)
	got := deliver(t, h, typeA, bad+1, 1)
	assert.Equal(t, next, got, "a subscriber past the corrupt message reads on")
}
