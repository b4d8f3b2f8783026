package inflight_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/internal/natstest"
)

// ConsumeBatch hands every message over once, in batches no larger than
// asked, and a subject's messages in stream order.
func TestConsumeBatchKeepsEachSubjectsOrder(t *testing.T) {
	const subjects, per = 12, 50
	js := natstest.New(t).JetStream()
	ctx := t.Context()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	require.NoError(t, err)
	for i := range per {
		for s := range subjects {
			_, err := js.PublishAsync(fmt.Sprintf("s.%d", s), fmt.Appendf(nil, "%d", i))
			require.NoError(t, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishing did not complete within 30s")
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	require.NoError(t, err)

	var mu sync.Mutex
	last := map[string]uint64{}
	count := map[string]int{}
	var disorder []string
	handled, maxBatch := 0, 0
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- inflight.ConsumeBatch(runCtx, cons, inflight.Lanes{Name: "c", Workers: 3, AckWait: 30 * time.Second, PullMax: 100, Batch: 16},
			func(_ context.Context, msgs []jetstream.Msg) {
				mu.Lock()
				defer mu.Unlock()
				maxBatch = max(maxBatch, len(msgs))
				for _, m := range msgs {
					md, err := m.Metadata()
					if !assert.NoError(t, err) {
						continue
					}
					if md.Sequence.Stream <= last[m.Subject()] {
						disorder = append(disorder, m.Subject())
					}
					last[m.Subject()] = md.Sequence.Stream
					count[m.Subject()]++
					handled++
					_ = m.Ack()
				}
			})
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return handled >= subjects*per }, 30*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Empty(t, disorder, "out of order")
	assert.Equal(t, subjects*per, handled, "each once")
	assert.LessOrEqual(t, maxBatch, 16)
	for s, n := range count {
		assert.Equal(t, per, n, "subject %s", s)
	}
}
