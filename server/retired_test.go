package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/retention"
	"github.com/amends-dev/amends/server"
)

// tallies is a server.Retired with fixed tallies.
type tallies []retention.Tally

func (t tallies) Tallies(context.Context) ([]retention.Tally, error) { return t, nil }

func TestSummariesAddTheRecordsRetentionRemoved(t *testing.T) {
	// Given one live record of fingerprint A, and tallies of removed records of A and of B
	const fpA, fpB = "fp1-0123456789abcdef", "fp1-fedcba9876543210"
	base := newEnv(t)
	id := aggregate.RecordID("evt-1", fn)
	r, err := base.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1"}, Version: 1},
		Function: fn, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow", Fingerprint: fpA}, ExecuteAt: t0,
		RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 30},
	}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	require.NoError(t, base.index.WaitFor(t.Context(), id, r.Version))
	e := base.with(t, func(c *server.Config) {
		c.Retired = tallies{
			{Function: fn, ErrorCode: "Timeout", Fingerprint: fpA, Succeeded: 5, FirstAt: t0 - 100, LastAt: t0 - 10, LastBatch: 1},
			{Function: fn, ErrorCode: "Refused", Fingerprint: fpB, Unrecoverable: 2, FirstAt: t0 - 50, LastAt: t0 - 40, LastBatch: 1},
		}
	})

	// When the fingerprint summary is read
	resp := e.do(t, "GET", "/api/v1/summary?by=fingerprint", viewerKey, nil)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	var sum api.Summary
	resp.json(t, &sum)

	// Then the removed records are counted beside the live ones
	assert.Equal(t, 1, sum.Total, "total is of the records kept")
	assert.Equal(t, int64(7), sum.Removed)
	byFP := map[string]api.FingerprintGroup{}
	for _, g := range sum.Fingerprints {
		byFP[g.Fingerprint] = g
	}
	assert.Equal(t, 1, byFP[fpA].Total)
	assert.Equal(t, int64(5), byFP[fpA].Removed)
	assert.Equal(t, 0, byFP[fpB].Total, "a fingerprint whose records were all removed is still listed")
	assert.Equal(t, int64(2), byFP[fpB].Removed)
	assert.Equal(t, t0-50, byFP[fpB].FirstSeen)
	removed := map[string]int64{}
	for _, g := range sum.Groups {
		removed[g.ErrorCode] = g.Removed
	}
	assert.Equal(t, map[string]int64{"Timeout": 5, "Refused": 2}, removed)

	// And a filter of the group's fields selects them, any other field does not
	for q, want := range map[string]int64{
		"?fingerprint=" + fpB:            2,
		"?errorCode=Timeout":             5,
		"?processor=" + fn.ProcessorName: 7,
		"?processor=Other":               0,
		"?status=FAILED":                 0,
	} {
		resp := e.do(t, "GET", "/api/v1/summary"+q, viewerKey, nil)
		require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
		var s api.Summary
		resp.json(t, &s)
		assert.Equal(t, want, s.Removed, "summary%s", q)
	}

	// And without tallies nothing changes
	resp = base.do(t, "GET", "/api/v1/summary?by=fingerprint", viewerKey, nil)
	var plain api.Summary
	resp.json(t, &plain)
	assert.Zero(t, plain.Removed)
	assert.Len(t, plain.Fingerprints, 1)
}
