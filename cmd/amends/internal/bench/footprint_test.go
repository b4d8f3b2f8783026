package bench_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
	"github.com/amends-dev/amends/internal/natstest"
)

// The footprint measures every stream of the records, runs serve's
// retention sweep over them (they are made past the retention period)
// and measures again, and leaves nothing behind.
func TestFootprintMeasuresBeforeAndAfterRetention(t *testing.T) {
	env := newEnv(t, 1)
	env.Quick = true
	res, err := bench.RunFootprint(t.Context(), env, bench.FootprintConfig{Attempts: []int{2}, PerShape: 20, Startup: []int{1000},
		QueryRuns: 10 * time.Millisecond, Compression: []string{bench.CompressionNone}})
	require.NoError(t, err)
	byWhat := map[string]bench.DiskRow{}
	for _, d := range res.Disk {
		byWhat[d.What] = d
	}
	stream, views := byWhat["compensation stream"], byWhat["views bucket"]
	assert.InDelta(t, 5, stream.MsgsPerRecord, 0.01, "created, 2 prepared, failed once, succeeded: %+v", stream)
	assert.Zero(t, stream.AfterMsgsPerRecord, "the sweep purged every history: %+v", stream)
	assert.Less(t, stream.AfterBytesPerRecord, stream.BytesPerRecord/10, "%+v", stream)
	// 100 records of 5 processors: a view a record and a key a processor.
	assert.InDelta(t, 1.05, views.MsgsPerRecord, 0.01, "a view a record, a key a processor: %+v", views)
	assert.InDelta(t, 1.05, views.AfterMsgsPerRecord, 0.01, "a delete marker a record, a key a processor: %+v", views)
	assert.Positive(t, views.AfterBytesPerRecord, "%+v", views)
	assert.Less(t, views.AfterBytesPerRecord, views.BytesPerRecord/2, "the views deleted: %+v", views)
	require.Len(t, res.Startup, 1)
	assert.Equal(t, 1000, res.Startup[0].Records)
	names := env.JS.StreamNames(t.Context())
	for n := range names.Name() {
		t.Errorf("stream %s was left behind", n)
	}
}

// On a file store of this process the footprint reads the streams' files:
// with S2, the compensation stream's full blocks take a fraction of their
// raw bytes; without, all of them. 900 records of one attempt fill one
// 8 MiB block.
func TestFootprintMeasuresTheFilesWithAndWithoutCompression(t *testing.T) {
	srv := natstest.New(t)
	env := &bench.Env{JS: srv.JetStream(), Storage: jetstream.FileStorage, StoreDir: srv.StoreDir, Prefix: "d", Quick: true}
	res, err := bench.RunFootprint(t.Context(), env, bench.FootprintConfig{Attempts: []int{1}, PerShape: 900, Startup: []int{1000},
		QueryRuns: 10 * time.Millisecond})
	require.NoError(t, err)
	stream := map[string]bench.DiskRow{}
	for _, d := range res.Disk {
		if d.What == "compensation stream" {
			stream[d.Compression] = d
		}
	}
	none, s2 := stream[bench.CompressionNone], stream[bench.CompressionS2]
	require.Equal(t, 1, none.FullBlocks, "%+v", none)
	require.Equal(t, 1, s2.FullBlocks, "%+v", s2)
	assert.InDelta(t, none.BytesPerRecord, none.DiskBytesPerRecord, none.BytesPerRecord*0.05, "uncompressed, the files hold the raw bytes: %+v", none)
	assert.Less(t, s2.DiskBytesPerRecord, s2.BytesPerRecord/3, "S2 compresses the full block: %+v", s2)
	assert.InDelta(t, none.BytesPerRecord, s2.BytesPerRecord, none.BytesPerRecord*0.05, "readers see the same messages: %+v %+v", none, s2)
}
