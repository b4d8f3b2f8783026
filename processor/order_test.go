package processor_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
)

// Per-aggregate order holds with concurrency 16 over 1000 aggregates × 20
// events, while different aggregates run in parallel.
func TestPerAggregateOrder(t *testing.T) {
	// 6 000 streams: enough for every lane to hold many aggregates at once,
	// few enough to append and handle under -race on a busy machine.
	const aggregates, versions, writers = 300, 20, 8
	e := newEnv(t)
	p := e.processor(processor.WithConcurrency(16))
	var (
		mu         sync.Mutex
		last       = make(map[string]uint64, aggregates)
		violations []string
		handled    atomic.Int64
		inFlight   atomic.Int64
		// The first call waits until another call runs beside it: proof
		// of parallel lanes that does not depend on how the machine
		// schedules calls that short.
		first    atomic.Bool
		together = make(chan struct{})
		once     sync.Once
	)
	require.NoError(t, p.Register(fn("Projector", "onStep"), func(_ context.Context, d *processor.Delivery) error {
		if inFlight.Add(1) >= 2 {
			once.Do(func() { close(together) })
		}
		defer inFlight.Add(-1)
		if first.CompareAndSwap(false, true) {
			select {
			case <-together:
			case <-time.After(waitFor):
			}
		}
		mu.Lock()
		id := d.Stream.Aggregate.ID
		if d.Stream.Version != last[id]+1 {
			violations = append(violations, fmt.Sprintf("%s: version %d after %d", id, d.Stream.Version, last[id]))
		}
		last[id] = d.Stream.Version
		mu.Unlock()
		handled.Add(1)
		return nil
	}))
	run(t, p)

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for v := uint64(1); v <= versions; v++ {
				for a := w; a < aggregates; a += writers {
					st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order(fmt.Sprintf("o-%d", a)), CreateTime: t0,
						Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: []byte(`{}`)}}}
					if _, err := e.store.Append(context.Background(), st, v-1); err != nil {
						t.Errorf("append %s v%d: %v", st.Aggregate, v, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return handled.Load() == aggregates*versions }, 4*waitFor, tick)
	require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, violations, "every aggregate's events arrive in version order")
	assert.Len(t, last, aggregates)
	for id, v := range last {
		assert.Equal(t, uint64(versions), v, "aggregate %s saw every version", id)
	}
	select {
	case <-together:
	default:
		t.Error("no two aggregates were ever handled at the same time")
	}
}
