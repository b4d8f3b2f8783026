package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/bench"
	"github.com/amends-dev/amends/projection"
)

// The footprint measures every stream of the records, calls the
// retention sweep it is given and measures again, and leaves nothing
// behind.
func TestFootprintMeasuresBeforeAndAfterRetention(t *testing.T) {
	env := newEnv(t, 1)
	env.Quick = true
	var swept []string
	// A stand-in sweep: it purges the records' views, as retention will.
	sweep := func(ctx context.Context, target bench.RetentionTarget) error {
		for _, id := range target.Records {
			key, err := projection.EncodeKey(id)
			if err != nil {
				return err
			}
			if err := target.Views.Purge(ctx, key); err != nil {
				return err
			}
		}
		swept = append(swept, target.Records...)
		return nil
	}
	res, err := bench.RunFootprint(t.Context(), env, bench.FootprintConfig{Attempts: []int{2}, PerShape: 20, Startup: []int{1000},
		QueryRuns: 10 * time.Millisecond, Retention: sweep})
	require.NoError(t, err)
	assert.True(t, res.RetentionMeasured)
	assert.Len(t, swept, 20, "the sweep had every record")
	byWhat := map[string]bench.DiskRow{}
	for _, d := range res.Disk {
		byWhat[d.What] = d
	}
	stream, views := byWhat["compensation stream"], byWhat["views bucket"]
	assert.InDelta(t, 5, stream.MsgsPerRecord, 0.01, "created, 2 prepared, failed once, succeeded: %+v", stream)
	assert.Equal(t, stream.BytesPerRecord, stream.AfterBytesPerRecord, "the stand-in sweep leaves the stream")
	assert.Less(t, views.AfterBytesPerRecord, views.BytesPerRecord, "the views purged: %+v", views)
	require.Len(t, res.Startup, 1)
	assert.Equal(t, 1000, res.Startup[0].Records)
	names := env.JS.StreamNames(t.Context())
	for n := range names.Name() {
		t.Errorf("stream %s was left behind", n)
	}
}
