package processor_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
)

// Given two instances on one durable, each with the Ordered function,
// when events of a few aggregates arrive, some failing, and the heads are
// replayed, then the function never gets an aggregate's events out of
// version order, whichever instance handles them, and gets them all.
func TestOrderedScaleOutRespectsHolds(t *testing.T) {
	s := newSeen()
	const aggregates, versions = 3, 12
	for a := range aggregates {
		s.failOn(fmt.Sprintf("o-%d", a), 3, 1)
		s.failOn(fmt.Sprintf("o-%d", a), 7, 1)
	}
	e := newEnv(t)
	for range 2 {
		p := e.processor(processor.WithConcurrency(4))
		require.NoError(t, p.Register(fn("Projector", "onStep"), s.handle, processor.Ordered()))
		run(t, p)
	}
	hs, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	for v := uint64(1); v <= versions; v++ {
		for a := range aggregates {
			e.emit(order(fmt.Sprintf("o-%d", a)), v, ev("step", struct{}{}))
		}
	}
	clock := t0
	require.Eventually(t, func() bool {
		list, _, err := hs.List(context.Background(), processor.HoldFilter{Context: ctxName}, 100)
		require.NoError(t, err)
		for _, h := range list {
			if st, _, err := e.svc.Get(context.Background(), h.Head.Record); err == nil && st.Status == aggregate.StatusFailed {
				clock += 1000
				e.clock.SetMillis(clock)
				_, _ = e.svc.Execute(context.Background(), h.Head.Record, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test"})
			}
		}
		return len(list) == 0 && e.settled("Projector")
	}, waitFor, 20*tick)
	for a := range aggregates {
		id := fmt.Sprintf("o-%d", a)
		got := s.versions(id)
		for i := 1; i < len(got); i++ {
			require.GreaterOrEqual(t, got[i], got[i-1], "%s: calls %v", id, got)
		}
		seen := map[uint64]bool{}
		for _, v := range got {
			seen[v] = true
		}
		assert.Len(t, seen, versions, "%s got every version: %v", id, got)
	}
}
