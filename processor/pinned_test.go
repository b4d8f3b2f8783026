package processor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/processor"
)

// Two instances on one durable: by default both receive messages; with
// WithPinnedClient one instance receives them all.
func TestScaleOutAndPinnedClient(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			e := newEnv(t)
			var opts []processor.Option
			if pinned {
				opts = append(opts, processor.WithPinnedClient())
			}
			c := newCounter()
			var procs []*processor.Processor
			for range 2 {
				p := e.processor(opts...)
				require.NoError(t, p.Register(fn("Projector", "onAny"), c.handle))
				run(t, p)
				procs = append(procs, p)
			}
			const n = 200
			for i := range n {
				e.emit(order(fmt.Sprintf("o-%d", i)), 1, ev("order_placed", struct{}{}))
			}
			require.Eventually(t, func() bool { return e.settled("Projector") }, waitFor, tick)
			assert.Equal(t, int64(n), c.total.Load(), "every event handled once")
			a, b := procs[0].Metrics().Acked.Load(), procs[1].Metrics().Acked.Load()
			assert.Equal(t, uint64(n), a+b)
			if pinned {
				assert.True(t, a == 0 || b == 0, "one pinned instance received everything (%d, %d)", a, b)
			}
		})
	}
}
