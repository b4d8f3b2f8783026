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
	// Side names the side ("raw", "amends").
	Side string `json:"side"`
	// Ops counts operations; PerSec is units (Ops times the pair's PerOp)
	// per second.
	Ops     int           `json:"ops"`
	Elapsed time.Duration `json:"elapsedNs"`
	PerSec  float64       `json:"perSec"`
	// P50 and P99 are the operations' latencies.
	P50 time.Duration `json:"p50Ns"`
	P99 time.Duration `json:"p99Ns"`

	lat      []time.Duration
	busy     time.Duration // sum of the operations' own times
	nextWork []int
}

// maxSamples bounds the latencies kept per worker.
const maxSamples = 1 << 20

// run drives op with workers goroutines for d and adds to m. Workers keep
// their operation counters across rounds. before, if set, runs untimed
// before each operation.
func (m *Measurement) run(ctx context.Context, op, before Op, workers int, d time.Duration) error {
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
				if before != nil {
					if err := before(ctx, w, i); err != nil {
						errs[w] = err
						cancel()
						return
					}
				}
				var own time.Duration
				octx := context.WithValue(ctx, ownLatencyKey{}, &own)
				t := time.Now()
				if err := op(octx, w, i); err != nil {
					errs[w] = err
					cancel()
					return
				}
				d := time.Since(t)
				if own > 0 {
					d = own
				}
				if len(lats[w]) < maxSamples {
					lats[w] = append(lats[w], d)
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
		for _, l := range lats[w] {
			m.busy += l
		}
	}
	return nil
}

// finish computes the rate and percentiles. Units per operation scale the
// rate; with untimed work between operations the rate counts only the
// operations' own time, per worker.
func (m *Measurement) finish(perOp, workers int, untimed bool) {
	elapsed := m.Elapsed
	if untimed {
		elapsed = m.busy / time.Duration(max(workers, 1))
	}
	if elapsed > 0 {
		m.PerSec = float64(m.Ops*max(perOp, 1)) / elapsed.Seconds()
	}
	if len(m.lat) == 0 {
		return
	}
	slices.Sort(m.lat)
	m.P50 = m.lat[len(m.lat)/2]
	m.P99 = m.lat[min(len(m.lat)-1, len(m.lat)*99/100)]
	m.lat = nil
}

type ownLatencyKey struct{}

// ReportLatency lets an operation measure its latency itself, for
// operations whose interval does not start when they are called (the
// operation's ctx carries where to put it).
func ReportLatency(ctx context.Context, d time.Duration) {
	if p, ok := ctx.Value(ownLatencyKey{}).(*time.Duration); ok {
		*p = d
	}
}
