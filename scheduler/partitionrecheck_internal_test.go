package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
)

// Two instances on two plans take overlapping partitions at once (each
// listed the leases before the other took its own): the one that checks
// again once it holds its lease, and sees the other's, gives its own up;
// one that sees no overlap keeps its own.
func TestAPartitionTakenAtOnceWithAnOverlappingOneIsGivenUp(t *testing.T) {
	js := natstest.New(t).JetStream()
	leases, err := OpenLeases(t.Context(), js)
	require.NoError(t, err)
	plans, err := OpenPartitions(t.Context(), js, 1)
	require.NoError(t, err)
	instance := func(name string) *Partitions {
		p, err := NewPartitions(leases, plans, PartitionsConfig{Instance: name, Sizes: func() (map[string]uint64, map[string]uint64) { return nil, nil }})
		require.NoError(t, err)
		return p
	}
	a, c := instance("a"), instance("c")
	acquire := func(p *Partitions, id string) *lease {
		tok, err := partitionKeys.Encode(id)
		require.NoError(t, err)
		l := p.newLease(heldPrefix + tok)
		ok, err := l.acquire(t.Context())
		require.NoError(t, err)
		require.True(t, ok, "%s is free", id)
		return l
	}
	// c, on the plan that splits Billing in 4, took Billing/1/4; a, on the
	// plan of 2 parts, took Billing/1/2, which holds its records, and
	// Mailer, which overlaps nothing.
	cl := acquire(c, "Billing/1/4")
	next := map[string]*lease{"Billing/1/2": acquire(a, "Billing/1/2"), "Mailer": acquire(a, "Mailer")}
	a.recheck(t.Context(), []string{"Billing/1/2", "Mailer"}, next)
	assert.NotContains(t, next, "Billing/1/2", "given up")
	assert.Contains(t, next, "Mailer", "kept")
	held, err := a.namesUnder(t.Context(), heldPrefix)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"Billing/1/4", "Mailer"}, held, "the lease given up is released at once")

	// c checks again too: a's lease is gone, so it keeps its own.
	mine := map[string]*lease{"Billing/1/4": cl}
	c.recheck(t.Context(), []string{"Billing/1/4"}, mine)
	assert.Contains(t, mine, "Billing/1/4")
}
