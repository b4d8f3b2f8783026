package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/projection"
)

// StartupRow is the start-up of an index of Records records, next to its
// floors, all in one run: a raw watch of the same views bucket (what a
// full load cannot beat) and reading the snapshot's bytes (what a start
// from the snapshot cannot beat).
type StartupRow struct {
	Records int `json:"records"`
	// Fill is the time to write the views into the bucket (not a
	// start-up: how the bucket was made).
	Fill time.Duration `json:"fill"`
	// RawWatch reads every view of the bucket (a watch to its end).
	RawWatch time.Duration `json:"rawWatch"`
	// FullLoad is an index's Run until Ready without a snapshot.
	FullLoad time.Duration `json:"fullLoad"`
	// SnapshotSave encodes and stores a snapshot of the loaded index;
	// SnapshotBytes is its size.
	SnapshotSave  time.Duration `json:"snapshotSave"`
	SnapshotBytes int           `json:"snapshotBytes"`
	// SnapshotRead reads the snapshot's bytes from the object store.
	SnapshotRead time.Duration `json:"snapshotRead"`
	// FromSnapshot is an index's Run until Ready from the snapshot;
	// SnapshotLoad the part of it that read and decoded the snapshot
	// (projection.StartStats.SnapshotLoad), before the index's structures
	// were built.
	FromSnapshot time.Duration `json:"fromSnapshot"`
	SnapshotLoad time.Duration `json:"snapshotLoad"`
	// IndexBytesPerRecord is the heap the loaded index holds per record
	// (as BenchmarkIndexMemory measures it); BucketBytesPerRecord the
	// views bucket's bytes on disk per record.
	IndexBytesPerRecord  float64 `json:"indexBytesPerRecord"`
	BucketBytesPerRecord float64 `json:"bucketBytesPerRecord"`
	// HeapInUse is the process's heap in use with the loaded index, the
	// snapshot's bytes released.
	HeapInUse uint64 `json:"heapInUse"`
}

// QueryRow is one index query at one index size: the mean time per call.
type QueryRow struct {
	Query   string        `json:"query"`
	Records int           `json:"records"`
	PerCall time.Duration `json:"perCall"`
}

// startupFootprint fills a views bucket with n generated views (written
// directly, as projection's BenchmarkRebuild does: making n records
// through the event store would take far longer than reading them) and
// measures the floors and both start-ups, then the index queries on the
// index started from the snapshot.
func startupFootprint(ctx context.Context, env *Env, c FootprintConfig, n int) (StartupRow, []QueryRow, error) {
	row := StartupRow{Records: n}
	bucket := fmt.Sprintf("bench_%s_startup%d_views", env.Prefix, n)
	views, err := projection.OpenViews(ctx, env.JS, projection.WithBucket(bucket), projection.WithBucketStorage(env.Storage))
	if err != nil {
		return row, nil, err
	}
	defer func() { _ = env.JS.DeleteKeyValue(context.Background(), bucket) }()
	snapBucket := fmt.Sprintf("bench_%s_startup%d_snapshots", env.Prefix, n)
	snaps, err := projection.OpenSnapshots(ctx, env.JS, projection.WithSnapshotBucket(snapBucket), projection.WithSnapshotStorage(env.Storage, 1))
	if err != nil {
		return row, nil, err
	}
	defer func() { _ = env.JS.DeleteObjectStore(context.Background(), snapBucket) }()

	start := time.Now()
	if err := fillViews(ctx, env.JS, bucket, n); err != nil {
		return row, nil, err
	}
	row.Fill = time.Since(start)
	if st, err := views.Status(ctx); err == nil {
		row.BucketBytesPerRecord = float64(st.Bytes()) / float64(n)
	}
	c.Logger.Info("footprint: views written", "records", n, "took", row.Fill)

	if row.RawWatch, err = rawWatch(ctx, views, n); err != nil {
		return row, nil, err
	}
	clock := projection.WithClock(aggregate.ClockFunc(func() time.Time { return queryNow }))
	quiet := projection.WithIndexLogger(c.Logger)
	// The full load, with the heap it takes.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	full, err := projection.NewIndex(views, nil, clock, quiet, projection.WithSnapshots(snaps, projection.MaxSnapshotEvery))
	if err != nil {
		return row, nil, err
	}
	stopFull, took, err := startIndex(ctx, full, n)
	if err != nil {
		return row, nil, err
	}
	row.FullLoad = took
	runtime.GC()
	runtime.ReadMemStats(&after)
	row.IndexBytesPerRecord = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	start = time.Now()
	if _, err := full.SaveSnapshot(ctx); err != nil {
		stopFull()
		return row, nil, err
	}
	row.SnapshotSave = time.Since(start)
	stopFull() // nothing changed: no second save
	runtime.GC()
	c.Logger.Info("footprint: full load", "records", n, "took", row.FullLoad, "raw watch", row.RawWatch)

	// The floor of the start from the snapshot: its bytes read.
	start = time.Now()
	data, err := snaps.Load(ctx, bucket)
	if err != nil {
		return row, nil, err
	}
	row.SnapshotRead, row.SnapshotBytes = time.Since(start), len(data)
	runtime.GC()

	ix, err := projection.NewIndex(views, nil, clock, quiet, projection.WithSnapshots(snaps, projection.MaxSnapshotEvery))
	if err != nil {
		return row, nil, err
	}
	stop, took, err := startIndex(ctx, ix, n)
	if err != nil {
		return row, nil, err
	}
	defer stop()
	st := ix.StartStats()
	if !st.FromSnapshot {
		return row, nil, fmt.Errorf("the second index did not start from the snapshot")
	}
	row.FromSnapshot, row.SnapshotLoad = took, st.SnapshotLoad
	runtime.GC()
	runtime.ReadMemStats(&after)
	row.HeapInUse = after.HeapInuse
	c.Logger.Info("footprint: start from the snapshot", "records", n, "took", row.FromSnapshot, "snapshot read", row.SnapshotRead)
	queries, err := measureQueries(ix, n, c.QueryRuns)
	return row, queries, err
}

// fillWindow is how many publishes fillViews has outstanding at most,
// under the client's default limit (4000).
const fillWindow = 2048

// fillViews writes n generated views (the query scenarios' records) into
// bucket with asynchronous publishes, a window at a time.
func fillViews(ctx context.Context, js jetstream.JetStream, bucket string, n int) error {
	return fillViewsOf(ctx, js, bucket, n, nil)
}

// fillViewsOf is fillViews with each view's processor drawn by processor
// when it is not nil.
// announce writes processor's key (projection.ProcessorKey) in bucket
// once, as the projector does with a processor's first view.
func announce(ctx context.Context, js jetstream.JetStream, bucket, processor string, done map[string]bool) error {
	if done[processor] {
		return nil
	}
	key, err := projection.ProcessorKey(processor)
	if err != nil {
		return err
	}
	if _, err := js.Publish(ctx, "$KV."+bucket+"."+key, nil); err != nil {
		return err
	}
	done[processor] = true
	return nil
}

func fillViewsOf(ctx context.Context, js jetstream.JetStream, bucket string, n int, processor func() string) error {
	r := rand.New(rand.NewPCG(uint64(n), 42))
	announced := map[string]bool{}
	for i := range n {
		v := generatedView(r, i)
		if processor != nil {
			v.State.Function.ProcessorName = processor()
		}
		if err := announce(ctx, js, bucket, v.State.Function.ProcessorName, announced); err != nil {
			return err
		}
		v.Seq += 20                  // version v is at a sequence of at least v, or the view does not validate
		data, err := json.Marshal(v) // the bytes the view codec writes (projection/view.go)
		if err != nil {
			return err
		}
		key, err := projection.ViewKey(v.State.Function.ProcessorName, v.State.ID)
		if err != nil {
			return err
		}
		if err := publishWindowed(ctx, js, "$KV."+bucket+"."+key, data); err != nil {
			return err
		}
		if i%fillWindow == fillWindow-1 {
			if err := published(ctx, js); err != nil {
				return err
			}
		}
	}
	return published(ctx, js)
}

// publishWindowed publishes data on subject asynchronously, waiting for
// the window when the server is behind (a busy machine).
func publishWindowed(ctx context.Context, js jetstream.JetStream, subject string, data []byte) error {
	_, err := js.PublishAsync(subject, data)
	for tries := 0; errors.Is(err, jetstream.ErrTooManyStalledMsgs) && tries < 100; tries++ {
		if err := published(ctx, js); err != nil {
			return err
		}
		_, err = js.PublishAsync(subject, data)
	}
	return err
}

// published waits until js's asynchronous publishes are acknowledged.
func published(ctx context.Context, js jetstream.JetStream) error {
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rawWatch reads every view of the bucket with a plain watch, the floor
// of a full load.
func rawWatch(ctx context.Context, views jetstream.KeyValue, n int) (time.Duration, error) {
	start := time.Now()
	// The whole history, as the index watches it (a bucket of one revision
	// per key holds nothing else): its consumer starts at once, where one
	// of the last value per key makes the server index every subject
	// first (past the API's 5 s at 10 M keys on a busy machine).
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	w, err := views.WatchAll(ctx, jetstream.IncludeHistory())
	if err != nil {
		return 0, err
	}
	defer func() { _ = w.Stop() }()
	got := 0
	for e := range w.Updates() {
		if e == nil {
			break
		}
		if strings.Contains(e.Key(), ".") {
			got++ // a view; the others are the processors' keys
		}
	}
	if got != n {
		return 0, fmt.Errorf("the raw watch read %d views, want %d", got, n)
	}
	return time.Since(start), nil
}

// startIndex runs ix until it is ready and holds n records; stop ends its
// Run and waits for it.
func startIndex(ctx context.Context, ix *projection.Index, n int) (stop func(), took time.Duration, err error) {
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ix.Run(rctx) }()
	stop = func() { cancel(); <-done }
	select {
	case <-ix.Ready():
	case <-ctx.Done():
		stop()
		return nil, 0, ctx.Err()
	}
	took = time.Since(start)
	if ix.Len() != n {
		stop()
		return nil, 0, fmt.Errorf("the index holds %d records, want %d", ix.Len(), n)
	}
	return stop, took, nil
}

// queryIndexAt is queryIndex without the heap figure.
func queryIndexAt(n int) (*projection.Index, error) {
	ix, _, err := queryIndex(n)
	return ix, err
}

// footprintQueries are the query scenarios' queries (due, list, summary,
// count).
var footprintQueries = []struct {
	name string
	run  func(*projection.Index) error
}{{"due", dueQuery}, {"list", listQuery}, {"summary", summaryQuery}, {"count", countQuery}}

// measureQueries runs each query on ix, of n records, for about d and
// returns the mean time per call.
func measureQueries(ix *projection.Index, n int, d time.Duration) ([]QueryRow, error) {
	var rows []QueryRow
	for _, q := range footprintQueries {
		calls := 0
		start := time.Now()
		for time.Since(start) < d || calls < 3 {
			if err := q.run(ix); err != nil {
				return rows, fmt.Errorf("%s at %d records: %w", q.name, n, err)
			}
			calls++
		}
		rows = append(rows, QueryRow{Query: q.name, Records: n, PerCall: time.Since(start) / time.Duration(calls)})
	}
	return rows, nil
}
