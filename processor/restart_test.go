package processor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
)

// crashAfterRecord records, then loses the connection before the
// processor can ack: the process "dies" between recording and acking.
type crashAfterRecord struct {
	inner processor.FailureRecorder
	crash func()
	once  sync.Once
}

func (c *crashAfterRecord) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	out, err := c.inner.Record(ctx, x)
	c.once.Do(c.crash)
	return out, err
}

// Stopping the processor between a failure and its ack, then restarting
// it, still leaves exactly one record; the function ran again (at least
// once), the redelivery is ALREADY_RECORDED and acked.
func TestRestartBetweenFailureAndAck(t *testing.T) {
	e := newEnv(t)
	mailer := newCounter()
	mailer.failWith(errBoom)
	newProc := func(opts ...processor.Option) *processor.Processor {
		p := e.processor(append(opts, processor.WithAckWait(2*time.Second))...)
		require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
		return p
	}
	crashing := &crashAfterRecord{inner: e.rec, crash: e.nc.Close}
	p1 := newProc(processor.WithRecorder(crashing))
	stop := run(t, p1)
	evt := e.emit(order("o-1"), 1, ev("order_placed", struct{}{})).Events[0].ID
	require.Eventually(t, func() bool { return e.nc.IsClosed() }, waitFor, tick, "the first process recorded and died")
	stop()
	assert.Equal(t, uint64(0), p1.Metrics().Acked.Load(), "the first process could not ack")

	e.connect() // a new process: new connection, store, service and recorder
	require.Equal(t, aggregate.StatusFailed, e.record(evt, info("Mailer", "onPlaced")).Status, "recorded before the crash")
	p2 := newProc()
	run(t, p2)
	require.Eventually(t, func() bool { return e.settled("Mailer") }, waitFor, tick, "the redelivered message is acked")

	assert.Equal(t, 2, mailer.count(evt), "the function ran again on redelivery (at least once)")
	assert.Equal(t, uint64(1), e.rec.Metrics().AlreadyRecorded.Load(), "the second failure found the record")
	assert.Equal(t, 1, e.recordCount(), "exactly one record")
	_, version, err := e.svc.Get(context.Background(), aggregate.RecordID(evt, info("Mailer", "onPlaced")))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), version, "the record holds one command")
}
