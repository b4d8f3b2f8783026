// Package eventstoretest is the conformance suite of the eventstore
// contract: every implementation of eventstore.Store runs it from its own
// tests, so that processor, projection and notify can rely on what the
// contract promises, whichever store they are given.
//
//	func TestConformance(t *testing.T) {
//		eventstoretest.Run(t, func(t *testing.T) eventstoretest.Harness[jetstream.Msg] {
//			st := newStoreOnAFreshServer(t)
//			return eventstoretest.Harness[jetstream.Msg]{Store: st, Subscribe: ..., WriteRaw: ...}
//		})
//	}
//
// Run calls the constructor once per check, so each check has a store of
// its own (for jsstore, its own in-process JetStream). The checks cover
// every operation of the contract: append and read back, ordering and
// previous sequences, long histories, optimistic concurrency conflicts
// (the error is an *eventstore.ConflictError matching
// eventstore.ErrConflict), idempotent stream ids, concurrent appends,
// unknown aggregates, versions and sequences (eventstore.ErrNotFound),
// invalid and oversized input (eventstore.ErrInvalid, naming the limit,
// nothing written), provisioning, consuming the log from a position
// (Feed.DecodeMsg on what a subscriber receives) and values the store did
// not write (eventstore.ErrCorrupt from every read, never a panic).
package eventstoretest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
)

// Harness is one store under test with the hooks the suite needs to reach
// past the contract: how a subscriber of the store's transport receives
// the log, and how a foreign writer puts a value in it.
type Harness[M any] struct {
	// Store is the store under test. Required.
	Store eventstore.Store[M]
	// Subscribe returns the messages of the bounded context's log (of one
	// aggregate type's part of it when aggregateType is not empty) from
	// sequence from on, in log order, as a subscriber of the store's
	// transport receives them: n of them, waiting until they arrived or
	// ctx ends. Required.
	Subscribe func(ctx context.Context, context, aggregateType string, from uint64, n int) ([]M, error)
	// WriteRaw stores data as the next message at aggregate a's place in
	// the log, bypassing the store, as another program could: a value the
	// store did not write. It returns the message's sequence. Nil skips
	// the checks of corrupt values.
	WriteRaw func(ctx context.Context, a eventstore.AggregateID, data []byte) (uint64, error)
	// MaxStreamBytes is the size from which the store refuses a stream
	// (an encoded document of that many bytes no longer fits). Zero skips
	// the oversized-input check.
	MaxStreamBytes int
	// SubjectOf returns the subject a message of the transport carries:
	// the check that Store.Subject names it. Nil skips that check.
	SubjectOf func(m M) string
}

// Run runs every check of the contract against the stores newHarness
// makes, one store per check, each check a subtest named for what it
// checks.
func Run[M any](t *testing.T, newHarness func(t *testing.T) Harness[M]) {
	checks := []struct {
		name string
		fn   func(t *testing.T, h Harness[M])
	}{
		{"AppendAndReadBack", checkAppendAndReadBack[M]},
		{"Ordering", checkOrdering[M]},
		{"LongHistory", checkLongHistory[M]},
		{"Conflict", checkConflict[M]},
		{"IdempotentStreamID", checkIdempotent[M]},
		{"ConcurrentAppends", checkConcurrentAppends[M]},
		{"UnknownAggregate", checkUnknown[M]},
		{"InvalidInput", checkInvalid[M]},
		{"Oversized", checkOversized[M]},
		{"Provision", checkProvision[M]},
		{"SubscribeFromPosition", checkSubscribe[M]},
		{"Corrupt", checkCorrupt[M]},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			require.NotNil(t, h.Store, "the harness has a store")
			require.NotNil(t, h.Subscribe, "the harness has a Subscribe hook")
			c.fn(t, h)
		})
	}
}

// The bounded context and aggregate types the checks use.
const (
	suiteContext = "conformance"
	typeA        = "alpha"
	typeB        = "beta"
)

// createTime is the creation time of the suite's streams.
var createTime = time.UnixMilli(1735000000000)

// ids makes ids unique within a test.
var ids atomic.Uint64

func newID() string { return fmt.Sprintf("id-%d", ids.Add(1)) }

func agg(typ, id string) eventstore.AggregateID {
	return eventstore.AggregateID{Context: suiteContext, Type: typ, ID: id}
}

// stream builds a stream of one event on a whose body says n.
func stream(t testing.TB, a eventstore.AggregateID, n int) eventstore.Stream {
	t.Helper()
	st, err := eventstore.NewStream(a, createTime, newID, eventstore.NewEvent{Name: "step", Body: map[string]int{"n": n}})
	require.NoError(t, err)
	return st
}

// appendN appends n streams to a from version from and returns them as
// committed.
func appendN[M any](t testing.TB, s eventstore.Store[M], a eventstore.AggregateID, from uint64, n int) []eventstore.Stream {
	t.Helper()
	out := make([]eventstore.Stream, 0, n)
	for i := range n {
		v := from + uint64(i)
		c, err := s.Append(ctx(t), stream(t, a, int(v)+1), v)
		require.NoError(t, err, "append %s version %d", a, v+1)
		out = append(out, c)
	}
	return out
}

// ctx is a test's context with a deadline that holds on a loaded machine.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// body returns the n an event body of stream() says.
func body(t testing.TB, st eventstore.Stream) int {
	t.Helper()
	require.Len(t, st.Events, 1, "stream %s version %d has its one event", st.Aggregate, st.Version)
	var b struct{ N int }
	require.NoError(t, json.Unmarshal(st.Events[0].Body, &b), "the event body reads back as JSON")
	return b.N
}
