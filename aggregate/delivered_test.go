package aggregate_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// readsStore is a countingStore that also counts the checks of an
// unchanged record (*jsstore.Store's LoadLastIfChanged).
type readsStore struct {
	countingStore
	js     *jsstore.Store
	checks atomic.Int64
}

func (r *readsStore) LoadLastIfChanged(ctx context.Context, a eventstore.AggregateID, known uint64) (eventstore.Stream, bool, error) {
	r.checks.Add(1)
	return r.js.LoadLastIfChanged(ctx, a, known)
}

// reads is every read but the checks.
func (r *readsStore) reads() int64 { return r.lastCalls.Load() + r.loadCalls.Load() }

// deliveredEnv is a writer Service (the scheduler, elsewhere) and a reader
// Service on a store of its own (the service that replays), on one server.
func deliveredEnv(t *testing.T) (writer *Service, js *jsstore.Store, reader *Service, reads *readsStore) {
	t.Helper()
	srv := natstest.New(t)
	js, err := jsstore.New(srv.JetStream())
	require.NoError(t, err)
	own, err := jsstore.New(srv.JetStream())
	require.NoError(t, err)
	reads = &readsStore{countingStore: countingStore{Store: own}, js: own}
	return NewService(js, WithClock(newClock(t0))), js, NewService(reads, WithClock(newClock(t0))), reads
}

// A record delivered at its last version is taken from the delivery: the
// reader checks that nothing follows, reads nothing else, and appends
// its next command without a read.
func TestGetDeliveredTakesTheDeliveredState(t *testing.T) {
	writer, js, reader, reads := deliveredEnv(t)
	_, err := writer.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	prepared, err := writer.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	delivered, err := js.LoadLast(t.Context(), RecordAggregate("r")) // what a consumer decodes
	require.NoError(t, err)

	got, v, err := reader.GetDelivered(t.Context(), delivered)
	require.NoError(t, err)
	assert.Equal(t, prepared.Version, v)
	assert.Equal(t, prepared.State, got)
	assert.Equal(t, int64(1), reads.checks.Load(), "one check that nothing follows")
	assert.Zero(t, reads.reads(), "no other read")

	res, err := reader.Execute(t.Context(), "r", ApplyExecutionSuccess{ExecuteAt: t0, Attempt: got.Attempt(), PreparedVersion: v}, Meta{})
	require.NoError(t, err)
	assert.Equal(t, StatusSucceeded, res.State.Status)
	assert.Equal(t, int64(1), reads.checks.Load(), "the success appended without reading the record")
	assert.Zero(t, reads.reads())
}

// A record that moved on after the delivered stream is returned as it is
// now; so is one whose delivered stream carries no state.
func TestGetDeliveredReadsARecordThatMovedOn(t *testing.T) {
	writer, js, reader, _ := deliveredEnv(t)
	_, err := writer.Execute(t.Context(), "r", create, Meta{})
	require.NoError(t, err)
	_, err = writer.Execute(t.Context(), "r", PrepareCompensation{}, Meta{})
	require.NoError(t, err)
	delivered, err := js.LoadLast(t.Context(), RecordAggregate("r"))
	require.NoError(t, err)
	failed, err := writer.Execute(t.Context(), "r", ApplyExecutionFailed{ExecuteAt: t0, Error: boom, Attempt: 1, PreparedVersion: delivered.Version}, Meta{})
	require.NoError(t, err)

	got, v, err := reader.GetDelivered(t.Context(), delivered)
	require.NoError(t, err)
	assert.Equal(t, failed.Version, v, "the record as it is now")
	assert.Equal(t, StatusFailed, got.Status)

	stateless := delivered
	stateless.State = nil
	got, v, err = reader.GetDelivered(t.Context(), stateless)
	require.NoError(t, err)
	assert.Equal(t, failed.Version, v, "a stream without a state is read as GetAtLeast reads it")
	assert.Equal(t, StatusFailed, got.Status)
}

// A stream of another aggregate is refused, naming it.
func TestGetDeliveredRefusesAnotherAggregate(t *testing.T) {
	_, _, reader, reads := deliveredEnv(t)
	_, _, err := reader.GetDelivered(t.Context(), eventstore.Stream{ID: "s-1", Aggregate: eventstore.AggregateID{Context: "orders", Type: "order", ID: "o-1"}, Version: 1, Seq: 3})
	require.ErrorIs(t, err, ErrIllegalArgument)
	assert.Contains(t, err.Error(), "orders")
	assert.Zero(t, reads.checks.Load()+reads.reads(), "nothing was read")
}
