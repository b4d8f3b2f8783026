package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/partition"
)

// The coordinator adds what the live members hold, takes for a processor
// no one holds the most any member saw, and leaves out a member that is
// gone and a report that does not read.
func TestTheSizesAreTheLiveMembersReports(t *testing.T) {
	js := natstest.New(t).JetStream()
	leases, err := OpenLeases(t.Context(), js)
	require.NoError(t, err)
	plans, err := OpenPartitions(t.Context(), js, 1)
	require.NoError(t, err)
	p, err := NewPartitions(leases, plans, PartitionsConfig{Instance: "a", Sizes: func() (map[string]uint64, map[string]uint64) { return nil, nil }})
	require.NoError(t, err)
	for key, s := range map[string]Sizes{
		"sizes.a":    {Records: map[string]uint64{"Mailer": 30, "Billing": 5}, Unplaced: map[string]uint64{"New": 4}},
		"sizes.b":    {Records: map[string]uint64{"Mailer": 12}, Unplaced: map[string]uint64{"New": 9, "Billing": 100}},
		"sizes.gone": {Records: map[string]uint64{"Mailer": 1000}},
	} {
		_, err := p.reports.Put(t.Context(), key, s)
		require.NoError(t, err)
	}
	_, err = plans.KV().Put(t.Context(), "sizes.c", []byte(`{"records":{"Mailer/0/2":1}}`))
	require.NoError(t, err)
	got, err := p.sizesOf(t.Context(), []string{"a", "b", "c"})
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{"Mailer": 42, "Billing": 5, "New": 9}, got)
}

// The coordinator places by steady sizes: a processor of the last plan
// that no member reports (its partitions are moving) keeps its last known
// size; what the members report is taken as it is.
func TestTheCoordinatorPlacesBySteadySizes(t *testing.T) {
	p := &Partitions{}
	prev := partition.Plan{Owners: map[string]string{"Alpha": "a", "Beta/0/2": "a", "Beta/1/2": "b", "Gamma": "b"}, Splits: map[string]int{"Beta": 2}}
	require.Equal(t, map[string]uint64{"Alpha": 10, "Beta": 400, "Gamma": 30},
		p.steady(map[string]uint64{"Alpha": 10, "Beta": 400, "Gamma": 30}, prev))
	require.Equal(t, map[string]uint64{"Alpha": 4, "Beta": 400, "Gamma": 30, "New": 5},
		p.steady(map[string]uint64{"Alpha": 4, "Beta": 400, "New": 5}, prev), "Gamma moving: as last known")
	require.Equal(t, map[string]uint64{"Alpha": 3, "Beta": 200, "Gamma": 30},
		p.steady(map[string]uint64{"Alpha": 3, "Beta": 200}, prev), "Gamma still moving")
	require.Equal(t, map[string]uint64{"Alpha": 3, "Beta": 200},
		(&Partitions{}).steady(map[string]uint64{"Alpha": 3, "Beta": 200}, prev), "a coordinator that never knew Gamma leaves it out, as before")
}
