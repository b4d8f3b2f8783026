package dashboard

import (
	"context"
	"net/http"
	"sync"

	"github.com/amends-dev/amends/internal/wait"
)

// trendSamples is how many samples the backlog trend keeps: an hour at
// the default period of a minute.
const trendSamples = 60

// Sample is one point of the backlog trend.
type Sample struct {
	// At is when it was taken, epoch ms.
	At int64 `json:"at"`
	// Due counts the records the scheduler would prepare at At.
	Due int `json:"due"`
	// OldestDueAge is how long the oldest due record had been due, in ms.
	OldestDueAge int64 `json:"oldestDueAge"`
}

// trend is a ring of the last samples. Safe for concurrent use.
type trend struct {
	mu   sync.Mutex
	ring []Sample
	next int
	full bool
}

func newTrend(n int) *trend { return &trend{ring: make([]Sample, n)} }

func (t *trend) add(s Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ring[t.next] = s
	t.next = (t.next + 1) % len(t.ring)
	if t.next == 0 {
		t.full = true
	}
}

// samples returns the samples oldest first.
func (t *trend) samples() []Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.full {
		return append([]Sample{}, t.ring[:t.next]...)
	}
	return append(append([]Sample{}, t.ring[t.next:]...), t.ring[:t.next]...)
}

// sample takes one backlog sample from the index.
func (d *Dashboard) sample() {
	c, err := d.counts()
	if err != nil {
		return
	}
	d.trend.add(Sample{At: c.At, Due: c.Due, OldestDueAge: c.OldestDueAge})
}

// sampleLoop samples at once and then every Sample until ctx ends.
func (d *Dashboard) sampleLoop(ctx context.Context) {
	d.sample()
	wait.Every(ctx, d.cfg.Sample, d.sample)
}

// Backlog is the body of GET /ui/v1/backlog.
type Backlog struct {
	// PeriodMs is the sampling period.
	PeriodMs int64 `json:"periodMs"`
	// Samples are the last hour's samples, oldest first.
	Samples []Sample `json:"samples"`
}

func (d *Dashboard) backlog(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, Backlog{PeriodMs: d.cfg.Sample.Milliseconds(), Samples: d.trend.samples()})
}
