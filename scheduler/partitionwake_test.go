package scheduler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/testwait"
)

// tickers feeds the rounds of the instances it was given while on.
type tickers struct {
	chans map[string]chan time.Time
}

func newTickers(names ...string) *tickers {
	t := &tickers{chans: map[string]chan time.Time{}}
	for _, n := range names {
		t.chans[n] = make(chan time.Time)
	}
	return t
}

// tick starts a round of each of names, once the one before ended.
func (t *tickers) tick(names ...string) {
	for _, n := range names {
		t.chans[n] <- time.Now()
	}
}

// An instance whose rounds no tick starts any more takes the partitions
// of another at once when that one stops (its leases deleted, a new plan
// written), and when it is killed, as soon as its leases expire: a freed
// lease and a new plan start a round.
func TestPartitionsAreTakenWhenFreedNotAtTheNextRound(t *testing.T) {
	t.Run("joined", func(t *testing.T) {
		// A member that joins is placed, and takes its part, with no
		// tick of anyone: its member lease starts the others' rounds.
		// (No lease expires meanwhile, which would start them too.)
		r := newPartitionsRig(t)
		r.ttl = time.Minute
		tk := newTickers("a", "b", "c")
		r.startTicked("a", tk.chans["a"])
		r.startTicked("b", tk.chans["b"])
		testwait.For(t, "two instances hold every partition once", func() bool {
			tk.tick("a", "b")
			return r.settled()
		})
		c := r.startTicked("c", tk.chans["c"])
		testwait.For(t, "the joiner takes its part", func() bool { return r.settled() && len(c.Held()) > 0 })
	})
	for _, end := range []string{"stopped", "killed"} {
		t.Run(end, func(t *testing.T) {
			r := newPartitionsRig(t)
			tk := newTickers("a", "b")
			r.startTicked("a", tk.chans["a"])
			b := r.startTicked("b", tk.chans["b"])
			testwait.For(t, "two instances hold every partition once", func() bool {
				tk.tick("a", "b")
				return r.settled()
			})
			require.NotEmpty(t, r.holdings()["a"])
			if end == "stopped" {
				r.stop("a")
			} else {
				r.kill("a")
			}
			// b's rounds start by wakes only from here: without them it
			// would hold what it held, and let it expire.
			testwait.For(t, "b holds every partition", func() bool {
				return r.settled() && len(r.holdings()) == 1 && len(b.Held()) > 0
			})
		})
	}
}
