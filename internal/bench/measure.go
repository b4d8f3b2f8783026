package bench

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Op is one operation of a side of a scenario. worker is the worker's index
// (0..concurrency-1), i counts that worker's operations from 0. An error
// stops the measurement.
type Op func(ctx context.Context, worker, i int) error

// Measurement is what one side of a scenario did.
type Measurement struct {
	Ops      int           `json:"ops"`
	Elapsed  time.Duration `json:"elapsedNs"`
	PerSec   float64       `json:"perSec"`
	P50      time.Duration `json:"p50Ns"`
	P99      time.Duration `json:"p99Ns"`
	lat      []time.Duration
	nextWork []int
}

// maxSamples bounds the latencies kept per worker.
const maxSamples = 1 << 20

// run drives op with workers goroutines for d and adds to m. Workers keep
// their operation counters across rounds.
func (m *Measurement) run(ctx context.Context, op Op, workers int, d time.Duration) error {
	if m.nextWork == nil {
		m.nextWork = make([]int, workers)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline := time.Now().Add(d)
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for i := m.nextWork[w]; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				t := time.Now()
				if err := op(ctx, w, i); err != nil {
					errs[w] = err
					cancel()
					return
				}
				if len(lats[w]) < maxSamples {
					lats[w] = append(lats[w], time.Since(t))
				}
				m.nextWork[w] = i + 1
			}
		})
	}
	wg.Wait()
	m.Elapsed += time.Since(start)
	for w := range workers {
		if errs[w] != nil {
			return errs[w]
		}
		m.Ops += len(lats[w])
		m.lat = append(m.lat, lats[w]...)
	}
	return nil
}

// finish computes the rate and percentiles.
func (m *Measurement) finish() {
	if m.Elapsed > 0 {
		m.PerSec = float64(m.Ops) / m.Elapsed.Seconds()
	}
	if len(m.lat) == 0 {
		return
	}
	slices.Sort(m.lat)
	m.P50 = m.lat[len(m.lat)/2]
	m.P99 = m.lat[min(len(m.lat)-1, len(m.lat)*99/100)]
	m.lat = nil
}
