package processor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
)

// The replay consumer holds the message of the prepare it replays; the
// record it reads to check that the attempt is still the one prepared may
// come from a replica that has not applied that prepare yet. Such a read
// must not skip the replay as stale: the record is read again from the
// stream leader, and the replay runs.
func TestReplayIsNotSkippedOnALaggingReplica(t *testing.T) {
	e, lag, _, records, p, mailer, evt, id := laggingReplay(t)
	_, v, err := records.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, uint64(1), v)
	lag.Freeze() // the replica keeps the record FAILED at version 1

	mailer.succeed()
	e.clock.SetMillis(t0 + 1000)
	e.prepare(id, false)
	require.Eventually(t, func() bool {
		return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded
	}, waitFor, tick, "the replay ran and succeeded")
	assert.Equal(t, 2, mailer.count(evt))
	assert.Zero(t, p.Metrics().ReplaysSkipped.Load(), "no replay was skipped as stale")
	assert.Positive(t, lag.Served(), "the lagging replica answered")
}

// A prepare message may reach the replay consumer before even the stream
// leader has applied it. The replay is then early, not stale: it is
// retried, never skipped, and runs once the record is readable.
func TestReplayWaitsWhileTheLeaderLags(t *testing.T) {
	e, lag, lagging, _, p, mailer, evt, id := laggingReplay(t)
	_, err := lagging.LoadLastFromLeader(t.Context(), aggregate.RecordAggregate(id)) // the leader's answer at version 1
	require.NoError(t, err)
	lag.Freeze()
	lag.LeaderLags(1 << 30)

	mailer.succeed()
	e.clock.SetMillis(t0 + 1000)
	e.prepare(id, false)
	require.Eventually(t, func() bool { return p.Metrics().Replay.Naked.Load() >= 2 }, waitFor, tick, "the early replay is retried")
	assert.Zero(t, p.Metrics().ReplaysSkipped.Load(), "an early replay is not skipped as stale")
	assert.Equal(t, 1, mailer.count(evt), "the function did not run on a state it cannot read")

	lag.LeaderLags(0)
	require.Eventually(t, func() bool {
		return e.record(evt, info("Mailer", "onPlaced")).Status == aggregate.StatusSucceeded
	}, waitFor, tick, "the replay ran once the leader had the prepare")
	assert.Equal(t, 2, mailer.count(evt))
	assert.Zero(t, p.Metrics().ReplaysSkipped.Load())
}

// laggingReplay runs a processor whose record reads go through a lagging
// replica, with a mailer that failed on one order: its record is FAILED.
func laggingReplay(t *testing.T) (e *env, lag *natstest.LaggingAPI, lagging *jsstore.Store, records *aggregate.Service, p *processor.Processor, mailer *counter, evt, id string) {
	t.Helper()
	e = newEnv(t)
	lag = e.srv.LaggingAPI()
	lagging, err := jsstore.New(lag.JetStream(), jsstore.WithAPIPrefix(natstest.LaggingAPIPrefix))
	require.NoError(t, err)
	records = aggregate.NewService(lagging, aggregate.WithClock(e.clock))
	p = e.processor(processor.WithRecords(records))
	mailer = newCounter()
	mailer.failWith(errBoom)
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(t, p)

	st := e.emit(order("o-1"), 1, ev("order_placed", struct{}{}))
	evt = st.Events[0].ID
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick)
	return e, lag, lagging, records, p, mailer, evt, aggregate.RecordID(evt, info("Mailer", "onPlaced"))
}
