package projection_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

func fpView(id, fp, msg string, status aggregate.Status, at int64) api.View {
	return api.View{Version: 1, State: aggregate.State{
		ID: id, EventID: aggregate.EventID{ID: "e-" + id, Version: 1},
		Function:  aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "billing", Name: "charge"},
		Error:     aggregate.ErrorDetails{ErrorCode: "Declined", ErrorMsg: msg, Fingerprint: fp},
		ExecuteAt: at, Status: status, Recoverable: aggregate.RecoverabilityUnknown,
		RetrySpec: aggregate.DefaultRetrySpec, RetryState: aggregate.RetryState{NextRetryAt: at},
	}}
}

func TestFingerprintIndexSummaryAndDue(t *testing.T) {
	ix, err := projection.NewIndex(nil, nil)
	require.NoError(t, err)
	const a, b = "fp1-000000000000000a", "fp1-000000000000000b"
	ix.Put(fpView("r1", a, "order 1 declined", aggregate.StatusFailed, 100))
	ix.Put(fpView("r2", a, "order 2 declined", aggregate.StatusSucceeded, 300))
	ix.Put(fpView("r3", a, "order 3 declined", aggregate.StatusFailed, 200))
	ix.Put(fpView("r4", b, strings.Repeat("é", 600), aggregate.StatusFailed, 50))
	ix.Put(fpView("r5", "", "no fingerprint", aggregate.StatusFailed, 10))

	groups, err := ix.FingerprintSummary(api.Filter{})
	require.NoError(t, err)
	require.Len(t, groups, 2, "records without a fingerprint are left out")
	g := groups[0]
	assert.Equal(t, a, g.Fingerprint, "the largest group first")
	assert.Equal(t, 3, g.Total)
	assert.Equal(t, map[aggregate.Status]int{aggregate.StatusFailed: 2, aggregate.StatusSucceeded: 1}, g.ByStatus)
	assert.Equal(t, int64(100), g.FirstSeen)
	assert.Equal(t, int64(300), g.LastSeen)
	assert.Equal(t, "order 1 declined", g.SampleMessage, "the first message seen")
	assert.Equal(t, "billing", g.Processor)
	assert.LessOrEqual(t, len(groups[1].SampleMessage), 512, "the sample is bounded")

	groups, err = ix.FingerprintSummary(api.Filter{Status: aggregate.StatusSucceeded})
	require.NoError(t, err)
	require.Len(t, groups, 1, "the filter applies")

	n, err := ix.Count(api.Filter{Fingerprint: a})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the fingerprint filters")
	n, err = ix.Count(api.Filter{Fingerprint: "fp1-ffffffffffffffff"})
	require.NoError(t, err)
	assert.Zero(t, n)
	page, err := ix.List(api.Query{Filter: api.Filter{ID: "r1"}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	assert.Equal(t, a, page.Items[0].Fingerprint, "items carry the fingerprint")

	due := ix.Due(time.UnixMilli(1000), 10)
	require.NotEmpty(t, due)
	for _, d := range due {
		assert.Equal(t, "charge", d.Function.Name)
		assert.Equal(t, "Declined", d.ErrorCode)
		if d.ID == "r1" {
			assert.Equal(t, a, d.Fingerprint, "a due record says its fingerprint for the holds")
		}
	}
}
