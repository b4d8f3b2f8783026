package projection_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/projection"
)

// Regression: after a serve was killed, the views lagged 20–60 s, the
// projector consumer's AckWait of 30 s: the messages the dead projector
// held were redelivered only then. Now the AckWait is 5 s, so a new
// projector gets them promptly.
func TestKilledProjectorsMessageIsProjectedPromptly(t *testing.T) {
	e := newEnv(t)
	first := e.projector(t)
	assert.Equal(t, projection.DefaultAckWait, first.ConsumerConfig().AckWait)
	stop := run(t, first)
	a := e.create(t, evt(1), fnA, "Timeout", nil)
	e.waitViews(t, map[string]uint64{a: 1})
	stop()

	// The first projector "dies" holding the next message: it was
	// delivered and never acknowledged.
	b := e.create(t, evt(2), fnA, "Timeout", nil)
	stream := e.store.StreamName(aggregate.Context)
	cons, err := e.js.Consumer(t.Context(), stream, projection.DefaultDurable)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, cons.CachedInfo().Config.AckWait, "the consumer's AckWait")
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
	require.NoError(t, err)
	m, ok := <-batch.Messages()
	require.True(t, ok, "the message of %s is delivered: %v", b, batch.Error())
	meta, err := m.Metadata()
	require.NoError(t, err)

	run(t, e.projector(t))
	require.Eventually(t, func() bool {
		v, err := projection.GetView(t.Context(), e.views, b)
		return err == nil && v.Version == 1
	}, 20*time.Second, 5*time.Millisecond, "the held message is redelivered after the 5 s AckWait, well before 30 s")
	info, err := cons.Info(t.Context())
	require.NoError(t, err)
	assert.Greater(t, info.Delivered.Consumer, meta.Sequence.Consumer, "redelivered to the new projector")
}

// slowViews delays the first update of a view by hold (a first view is
// written past the KeyValue, as a compare-and-set over the record's keys).
type slowViews struct {
	jetstream.KeyValue
	hold  time.Duration
	calls atomic.Int32
}

func (s *slowViews) wait(ctx context.Context) {
	if s.calls.Add(1) != 1 {
		return
	}
	t := time.NewTimer(s.hold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (s *slowViews) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	s.wait(ctx)
	return s.KeyValue.Update(ctx, key, value, revision)
}

// A projection that takes longer than the AckWait keeps its message with
// InProgress: it is not redelivered meanwhile.
func TestSlowProjectionIsNotRedelivered(t *testing.T) {
	e := newEnv(t)
	slow := &slowViews{KeyValue: e.views.KeyValue, hold: 4 * time.Second}
	p, err := projection.NewProjector(e.js, e.store, wrapViews(t, e, slow), projection.WithAckWait(time.Second))
	require.NoError(t, err)
	run(t, p)
	id := e.create(t, evt(1), fnA, "Timeout", nil)
	e.waitViews(t, map[string]uint64{id: 1})
	e.exec(t, id, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable}) // its update is slow
	e.waitViews(t, map[string]uint64{id: 2})

	cons, err := e.js.Consumer(t.Context(), e.store.StreamName(aggregate.Context), projection.DefaultDurable)
	require.NoError(t, err)
	info, err := cons.Info(t.Context())
	require.NoError(t, err)
	assert.Equal(t, time.Second, info.Config.AckWait)
	assert.Equal(t, uint64(2), info.Delivered.Consumer, "each stream delivered once, though the second's projection took four AckWaits")
	// The view is in the bucket once the write returns; the projector
	// counts it just after.
	require.Eventually(t, func() bool { return p.Stats().Projected+p.Stats().Rebuilt >= 2 }, 30*time.Second, 5*time.Millisecond, "the projections are counted")
	assert.Equal(t, uint64(2), p.Stats().Projected+p.Stats().Rebuilt)
	assert.Equal(t, int32(1), slow.calls.Load(), "updated once")
}

func TestAckWaitOptionIsChecked(t *testing.T) {
	e := newEnv(t)
	_, err := projection.NewProjector(e.js, e.store, e.views, projection.WithAckWait(time.Millisecond))
	assert.ErrorIs(t, err, projection.ErrInvalidOption)
}
