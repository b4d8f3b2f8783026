package eventstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

// locator is a Locator over a map of sequences and one of versions,
// counting the reads; seqErr is the error of every sequence read.
type locator struct {
	bySeq     map[uint64]eventstore.Stream
	byVersion map[uint64]eventstore.Stream
	seqErr    error
	reads     []string
}

func (l *locator) GetSeq(_ context.Context, _ string, seq uint64) (eventstore.Stream, error) {
	l.reads = append(l.reads, "seq")
	if l.seqErr != nil {
		return eventstore.Stream{}, l.seqErr
	}
	st, ok := l.bySeq[seq]
	if !ok {
		return eventstore.Stream{}, eventstore.ErrNotFound
	}
	return st, nil
}

func (l *locator) LoadVersion(_ context.Context, _ eventstore.AggregateID, v uint64) (eventstore.Stream, error) {
	l.reads = append(l.reads, "version")
	st, ok := l.byVersion[v]
	if !ok {
		return eventstore.Stream{}, eventstore.ErrNotFound
	}
	return st, nil
}

func TestLocateFindsAnEventBySequenceThenVersion(t *testing.T) {
	order := eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-1"}
	other := eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-2"}
	v2 := eventstore.Stream{Aggregate: order, Version: 2, Seq: 9, Events: []eventstore.Event{{ID: "e-a"}, {ID: "e-b"}}}
	unavailable := errors.New("nats: timeout")
	for _, c := range []struct {
		name   string
		l      *locator
		seq    uint64
		event  string
		reads  []string
		err    error
		wantAt int
	}{
		{name: "by its sequence", l: &locator{bySeq: map[uint64]eventstore.Stream{9: v2}}, seq: 9, event: "e-b", reads: []string{"seq"}, wantAt: 1},
		{name: "no sequence", l: &locator{byVersion: map[uint64]eventstore.Stream{2: v2}}, event: "e-a", reads: []string{"version"}},
		{name: "the sequence holds another aggregate", seq: 9, event: "e-b", reads: []string{"seq", "version"}, wantAt: 1,
			l: &locator{bySeq: map[uint64]eventstore.Stream{9: {Aggregate: other, Version: 2, Events: v2.Events}}, byVersion: map[uint64]eventstore.Stream{2: v2}}},
		{name: "the sequence is gone", l: &locator{byVersion: map[uint64]eventstore.Stream{2: v2}}, seq: 9, event: "e-a", reads: []string{"seq", "version"}},
		{name: "the sequence cannot be read now", l: &locator{seqErr: unavailable, byVersion: map[uint64]eventstore.Stream{2: v2}}, seq: 9, event: "e-a",
			reads: []string{"seq"}, err: unavailable},
		{name: "the version is gone", l: &locator{}, seq: 9, event: "e-a", reads: []string{"seq", "version"}, err: eventstore.ErrNotFound},
		{name: "the version has no such event", l: &locator{byVersion: map[uint64]eventstore.Stream{2: v2}}, event: "e-z", reads: []string{"version"},
			err: eventstore.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, i, err := eventstore.Locate(context.Background(), c.l, order, c.event, 2, c.seq)
			assert.Equal(t, c.reads, c.l.reads)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.event, st.Events[i].ID)
			assert.Equal(t, c.wantAt, i)
		})
	}
}
