package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
)

// The footprint measures every stream of the records, runs serve's
// retention sweep over them (they are made past the retention period)
// and measures again, and leaves nothing behind.
func TestFootprintMeasuresBeforeAndAfterRetention(t *testing.T) {
	env := newEnv(t, 1)
	env.Quick = true
	res, err := bench.RunFootprint(t.Context(), env, bench.FootprintConfig{Attempts: []int{2}, PerShape: 20, Startup: []int{1000},
		QueryRuns: 10 * time.Millisecond})
	require.NoError(t, err)
	byWhat := map[string]bench.DiskRow{}
	for _, d := range res.Disk {
		byWhat[d.What] = d
	}
	stream, views := byWhat["compensation stream"], byWhat["views bucket"]
	assert.InDelta(t, 5, stream.MsgsPerRecord, 0.01, "created, 2 prepared, failed once, succeeded: %+v", stream)
	assert.Zero(t, stream.AfterMsgsPerRecord, "the sweep purged every history: %+v", stream)
	assert.Less(t, stream.AfterBytesPerRecord, stream.BytesPerRecord/10, "%+v", stream)
	assert.InDelta(t, 1, views.MsgsPerRecord, 0.01, "a view a record: %+v", views)
	assert.InDelta(t, 1, views.AfterMsgsPerRecord, 0.01, "a delete marker a record: %+v", views)
	assert.Positive(t, views.AfterBytesPerRecord, "%+v", views)
	assert.Less(t, views.AfterBytesPerRecord, views.BytesPerRecord/2, "the views deleted: %+v", views)
	require.Len(t, res.Startup, 1)
	assert.Equal(t, 1000, res.Startup[0].Records)
	names := env.JS.StreamNames(t.Context())
	for n := range names.Name() {
		t.Errorf("stream %s was left behind", n)
	}
}
