package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/index"
)

type dueList []index.Due

func (l dueList) Due(time.Time, int) []index.Due { return l }

type execFunc func() (aggregate.Result, error)

func (f execFunc) Execute(context.Context, string, aggregate.Command, aggregate.Meta) (aggregate.Result, error) {
	return f()
}

// A round whose partition is given up while it sends (here: during the
// first prepare) skips the rest of that partition's records and ends:
// each skip gives its slot back. It kept them once, and a pass that had
// skipped as many records as it sends at once waited for a slot for good,
// so the instance prepared nothing more.
func TestARoundEndsPastTheRecordsOfAPartitionGivenUp(t *testing.T) {
	clock := fakeclock.At(time.Now().UnixMilli())
	soon := clock.Now().Add(time.Minute)
	p := &Partitions{clock: clock, changed: make(chan struct{}),
		valid: map[string]time.Time{"Billing": soon, "Mailer": clock.Now().Add(time.Hour)}, set: partition.NewSet([]string{"Billing", "Mailer"})}
	var due dueList
	for i := range 5 {
		due = append(due, index.Due{ID: fmt.Sprintf("r%d", i), Function: aggregate.FunctionInfo{ProcessorName: "Billing"}, NextRetryAt: clock.Now().UnixMilli()})
	}
	var sent atomic.Int32
	exec := execFunc(func() (aggregate.Result, error) {
		sent.Add(1)
		clock.Set(soon.Add(time.Second)) // Billing's lease lapses; Mailer's holds
		return aggregate.Result{}, nil
	})
	s, err := New(due, exec, &Leases{ttl: time.Minute}, WithPartitions(p), WithConcurrency(1), WithClock(clock))
	require.NoError(t, err)
	s.running = context.Background()

	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.round(t.Context(), clock.Now())
	}()
	testwait.For(t, "the round ends", func() bool {
		select {
		case <-ended:
			return true
		default:
			return false
		}
	})
	assert.Equal(t, int32(1), sent.Load(), "the first record is sent; the others' partition was given up")
}
