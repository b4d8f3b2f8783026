package retention_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/retention"
)

// benchRecords is the number of finished records each run removes.
const benchRecords = 2000

// BenchmarkSweep measures how many records per second the sweeper removes
// (each a history of 3 streams and a view), with and without an archive,
// next to its floor measured in the same run: raw JetStream purging the
// same number of 3-message subjects and deleting as many KV keys, one
// after the other as the sweeper does.
//
//	go test -run '^$' -bench BenchmarkSweep -benchtime 1x -count 3 ./scheduler/
func BenchmarkSweep(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			js := natstest.New(b).JetStream()
			ctx := b.Context()
			st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.>"}})
			require.NoError(b, err)
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "floor"})
			require.NoError(b, err)
			for i := range benchRecords {
				for range 3 {
					_, err := js.Publish(ctx, fmt.Sprintf("floor.r%d", i), []byte(`{"a stream of a record":"about this long, give or take a few hundred bytes of JSON"}`))
					require.NoError(b, err)
				}
				_, err := kv.Put(ctx, fmt.Sprintf("r%d", i), []byte(`{"view":1}`))
				require.NoError(b, err)
			}
			b.StartTimer()
			start := time.Now()
			for i := range benchRecords {
				require.NoError(b, st.Purge(ctx, jetstream.WithPurgeSubject(fmt.Sprintf("floor.r%d", i))))
				require.NoError(b, kv.Delete(ctx, fmt.Sprintf("r%d", i)))
			}
			elapsed += time.Since(start)
		}
		b.ReportMetric(float64(benchRecords*b.N)/elapsed.Seconds(), "records/s")
	})
	for _, archived := range []bool{false, true} {
		b.Run(fmt.Sprintf("sweep/archive=%v", archived), func(b *testing.B) {
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				e := newRetentionEnv(b, nil)
				versions := map[string]uint64{}
				for i := range benchRecords {
					id, v := e.succeed(b, i)
					versions[id] = v
				}
				e.indexed(b, versions)
				e.clock.Set(t0.Add(31 * day))
				var sink archive.Sink
				if archived {
					d, err := archive.OpenDir(b.TempDir())
					require.NoError(b, err)
					sink = d
				}
				sw := e.sweeper(b, retention.Config{Archive: sink, Batch: retention.DefaultBatch, Logger: slog.New(slog.DiscardHandler)})
				b.StartTimer()
				start := time.Now()
				reps, err := sw.SweepAll(b.Context())
				elapsed += time.Since(start)
				require.NoError(b, err)
				n := 0
				for _, r := range reps {
					n += r.Removed()
				}
				require.Equal(b, benchRecords, n)
			}
			b.ReportMetric(float64(benchRecords*b.N)/elapsed.Seconds(), "records/s")
		})
	}
}
