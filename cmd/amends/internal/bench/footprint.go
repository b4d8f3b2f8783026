package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
)

// FootprintConfig is what amends bench footprint measures.
type FootprintConfig struct {
	// Attempts are the record shapes whose bytes on disk are measured: a
	// record that took this many replays to succeed (default 1, 3, 10).
	Attempts []int
	// PerShape is how many records of each shape are made through the
	// event store and the projector (default 2 000; quick 100).
	PerShape int
	// Startup are the index sizes whose start-up is measured (default
	// 100 000 and 1 000 000; quick 20 000).
	Startup []int
	// QueryRuns is how long each index query runs per size (default 1 s;
	// quick 100 ms).
	QueryRuns time.Duration
	// Retention removes what retention removes from the records made for
	// the disk figures, which are then measured again ("after
	// retention"); default SweepRetention, the sweep serve runs.
	Retention RetentionFunc
	// Compression are the variants measured on disk: "none" (the streams
	// and buckets as amends made them before it compressed anything) and
	// "s2" (the compensation stream and the views bucket with JetStream's
	// S2 compression); default both, in that order.
	Compression []string
	// Logger reports progress (default: discard).
	Logger *slog.Logger
}

// Compression variants of the footprint.
const (
	CompressionNone = "none"
	CompressionS2   = "s2"
)

// RetentionFunc removes the finished records of t as retention would,
// as if their retention period had passed.
type RetentionFunc func(ctx context.Context, t RetentionTarget) error

// RetentionTarget is what a retention sweep works on: the event store and
// views bucket the records were made in, and their ids (every one
// SUCCEEDED).
type RetentionTarget struct {
	JS      jetstream.JetStream
	Store   *jsstore.Store
	Views   *projection.Views
	Records []string
}

// FootprintResult is the figures of one run.
type FootprintResult struct {
	Disk    []DiskRow    `json:"disk"`
	Startup []StartupRow `json:"startup"`
	Queries []QueryRow   `json:"queries"`
}

// DiskRow is one stream's bytes per record for records of one shape, as
// the stream's own info counts them (raw) and as its files on disk hold
// them.
type DiskRow struct {
	Attempts int    `json:"attempts"`
	Stream   string `json:"stream"`
	// Compression is the variant: CompressionNone or CompressionS2.
	Compression string `json:"compression"`
	// What is the stream's role: "compensation stream", "views bucket",
	// or "other".
	What           string  `json:"what"`
	BytesPerRecord float64 `json:"bytesPerRecord"`
	MsgsPerRecord  float64 `json:"msgsPerRecord"`
	// DiskBytesPerRecord is what the stream's files take per record (0
	// when not measured: a server of another process, or memory storage):
	// the stream's bytes per record scaled by the ratio of its full
	// blocks' files to the raw bytes they hold (the server compresses a
	// block once it is full), or its files over the records when no block
	// is full yet (FullBlocks 0).
	DiskBytesPerRecord float64 `json:"diskBytesPerRecord,omitempty"`
	FullBlocks         int     `json:"fullBlocks,omitempty"`
	// After the retention sweep (FootprintConfig.Retention).
	AfterBytesPerRecord float64 `json:"afterBytesPerRecord"`
	AfterMsgsPerRecord  float64 `json:"afterMsgsPerRecord"`
}

// DefaultFootprintStartup returns the start-up sizes measured when
// FootprintConfig.Startup is empty.
func DefaultFootprintStartup(quick bool) []int {
	if quick {
		return []int{20_000}
	}
	return []int{100_000, 1_000_000}
}

// RunFootprint measures the bytes on disk per record, the index's heap
// and start-up, and the index queries at the start-up sizes, on env's
// JetStream. Streams and buckets it makes carry env.Prefix and are
// deleted afterwards.
func RunFootprint(ctx context.Context, env *Env, c FootprintConfig) (FootprintResult, error) {
	c = c.withDefaults(env.Quick)
	if c.Retention == nil {
		c.Retention = SweepRetention(env)
	}
	var res FootprintResult
	for _, comp := range c.Compression {
		for _, a := range c.Attempts {
			c.Logger.Info("footprint: records on disk", "attempts", a, "records", c.PerShape, "compression", comp)
			rows, err := diskFootprint(ctx, env, c, a, comp)
			if err != nil {
				return res, fmt.Errorf("records of %d attempts, compression %s: %w", a, comp, err)
			}
			res.Disk = append(res.Disk, rows...)
		}
	}
	small, err := queryIndexAt(querySmall)
	if err != nil {
		return res, err
	}
	queries, err := measureQueries(small, querySmall, c.QueryRuns)
	if err != nil {
		return res, err
	}
	res.Queries = append(res.Queries, queries...)
	for _, n := range c.Startup {
		c.Logger.Info("footprint: start-up", "records", n)
		row, queries, err := startupFootprint(ctx, env, c, n)
		if err != nil {
			return res, fmt.Errorf("start-up at %d records: %w", n, err)
		}
		res.Startup = append(res.Startup, row)
		res.Queries = append(res.Queries, queries...)
	}
	return res, nil
}

func (c FootprintConfig) withDefaults(quick bool) FootprintConfig {
	if len(c.Attempts) == 0 {
		c.Attempts = []int{1, 3, 10}
	}
	if c.PerShape == 0 {
		c.PerShape = 2000
		if quick {
			c.PerShape = 100
		}
	}
	if len(c.Startup) == 0 {
		c.Startup = DefaultFootprintStartup(quick)
	}
	if len(c.Compression) == 0 {
		c.Compression = []string{CompressionNone, CompressionS2}
	}
	if c.QueryRuns == 0 {
		c.QueryRuns = time.Second
		if quick {
			c.QueryRuns = 100 * time.Millisecond
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// footprintStack is trace text of the size a Go service's failure
// carries (about 1 KB), so that the bytes per record are those of a
// real record rather than of an empty one.
var footprintStack = strings.Repeat("github.com/example/billing/internal/ledger.(*Poster).Post(0xc000123456, {0x1a2b3c, 0xc000abcdef})\n\t/src/billing/internal/ledger/post.go:142 +0x1f4\n", 8)

// diskFootprint makes c.PerShape records that each fail, are replayed
// attempts times (all but the last failing again) and succeed, projects
// them, and returns every stream's bytes per record.
func diskFootprint(ctx context.Context, env *Env, c FootprintConfig, attempts int, compression string) ([]DiskRow, error) {
	name := fmt.Sprintf("footprint%d%s", attempts, compression)
	sopts, vopts, err := footprintOptions(env, compression)
	if err != nil {
		return nil, err
	}
	store, closeStore, err := newStoreWith(ctx, env, name, sopts, aggregate.Context)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	bucket := "bench_" + env.Prefix + "_" + name + "_views"
	views, err := projection.OpenViews(ctx, env.JS, append(vopts, projection.WithBucket(bucket))...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.JS.DeleteKeyValue(context.Background(), bucket) }()
	// Made footprintAge ago, so that the sweep finds them past retention.
	clock := footprintClock()
	svc := aggregate.NewService(store, aggregate.WithClock(clock))
	ids, err := makeRecords(ctx, svc, clock, name, c.PerShape, attempts)
	if err != nil {
		return nil, err
	}
	durable := "bench-" + env.Prefix + "-" + name
	proj, err := projection.NewProjector(env.JS, store, views, projection.WithDurable(durable), projection.WithLogger(c.Logger))
	if err != nil {
		return nil, err
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- proj.Run(pctx) }()
	defer func() { stop(); <-done }()
	stream := store.StreamName(aggregate.Context)
	if err := waitProjected(ctx, env.JS, stream, durable); err != nil {
		return nil, err
	}
	roles := map[string]string{stream: "compensation stream", "KV_" + bucket: "views bucket"}
	before, err := streamBytes(ctx, env.JS, env.Prefix)
	if err != nil {
		return nil, err
	}
	disk, err := streamsDisk(ctx, env, before, name, compression)
	if err != nil {
		return nil, err
	}
	if err := c.Retention(ctx, RetentionTarget{JS: env.JS, Store: store, Views: views, Records: ids}); err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	after, err := streamBytes(ctx, env.JS, env.Prefix)
	if err != nil {
		return nil, err
	}
	var rows []DiskRow
	for s, st := range before {
		if !strings.Contains(s, name) {
			continue // another shape's
		}
		row := DiskRow{Attempts: attempts, Stream: s, Compression: compression, What: cmp.Or(roles[s], "other")}
		row.measured(len(ids), st, disk, after)
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].What+rows[i].Stream < rows[j].What+rows[j].Stream })
	return rows, nil
}

// measured fills in r's figures per record of n records: its stream's
// state st, its bytes on disk (when disk has them) and its state after
// retention (when the stream is left).
func (r *DiskRow) measured(n int, st jetstream.StreamState, disk map[string]diskUse, after map[string]jetstream.StreamState) {
	per := func(v uint64) float64 { return float64(v) / float64(n) }
	r.BytesPerRecord, r.MsgsPerRecord = per(st.Bytes), per(st.Msgs)
	if u, ok := disk[r.Stream]; ok {
		r.DiskBytesPerRecord, r.FullBlocks = u.perRecord(r.BytesPerRecord, n), u.Full
	}
	if a, ok := after[r.Stream]; ok {
		r.AfterBytesPerRecord, r.AfterMsgsPerRecord = per(a.Bytes), per(a.Msgs)
	}
}

// footprintOptions are the options of the event store and the views
// bucket of the records of a compression variant. The compensation stream
// is removable, as serve creates it, so that retention can purge.
func footprintOptions(env *Env, compression string) ([]jsstore.Option, []projection.BucketOption, error) {
	sopts := []jsstore.Option{jsstore.WithRemovable(aggregate.Context)}
	vopts := []projection.BucketOption{projection.WithBucketStorage(env.Storage)}
	switch compression {
	case CompressionNone:
	case CompressionS2:
		sopts = append(sopts, jsstore.WithCompressed(aggregate.Context))
		vopts = append(vopts, projection.WithBucketCompression())
	default:
		return nil, nil, fmt.Errorf("compression %q is neither %s nor %s", compression, CompressionNone, CompressionS2)
	}
	return sopts, vopts, nil
}

// streamsDisk measures on disk the streams of states whose names hold
// name, when env's server stores files in a directory of this process;
// none otherwise.
func streamsDisk(ctx context.Context, env *Env, states map[string]jetstream.StreamState, name, compression string) (map[string]diskUse, error) {
	disk := map[string]diskUse{}
	if env.StoreDir == "" || env.Storage != jetstream.FileStorage {
		return disk, nil
	}
	for s, st := range states {
		if !strings.Contains(s, name) {
			continue
		}
		u, err := streamDisk(ctx, env.StoreDir, s, st.Bytes, compression == CompressionS2)
		if err != nil {
			return nil, err
		}
		disk[s] = u
	}
	return disk, nil
}

// makeRecords makes n records through svc: each fails (created), then
// is prepared and fails again attempts-1 times, then is prepared and
// succeeds, at clock's times (svc's clock). It returns their ids.
func makeRecords(ctx context.Context, svc *aggregate.Service, clock aggregate.Clock, name string, n, attempts int) ([]string, error) {
	fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "billing", ProcessorName: "LedgerProjector", Name: "onOrderPaid"}
	failure := aggregate.ErrorDetails{ErrorCode: "LedgerUnavailable", ErrorMsg: "post entry: dial tcp 10.0.3.7:5432: connect: connection refused", StackTrace: footprintStack}
	meta := aggregate.Meta{Actor: "bench"}
	ids := make([]string, n)
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				evt := fmt.Sprintf("%s-evt-%07d", name, i)
				id := aggregate.RecordID(evt, fn)
				ids[i] = id
				now := clock.Now().UnixMilli()
				cmds := []aggregate.Command{aggregate.CreateExecutionFailed{
					EventID: aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order",
						AggregateID: fmt.Sprintf("order-%07d", i), TenantID: aggregate.DefaultTenantID}, Version: 1},
					Function: fn, Error: failure, ExecuteAt: now,
					RetrySpec: &aggregate.RetrySpec{MaxRetries: int32(attempts + 1), MinBackoff: 1, ExecutionTimeout: 60},
				}}
				for a := 1; a <= attempts; a++ {
					cmds = append(cmds, aggregate.ForcePrepareCompensation{})
					if a < attempts {
						cmds = append(cmds, aggregate.ApplyExecutionFailed{Error: failure, ExecuteAt: now})
					} else {
						cmds = append(cmds, aggregate.ApplyExecutionSuccess{ExecuteAt: now})
					}
				}
				for _, cmd := range cmds {
					if _, err := svc.Execute(ctx, id, cmd, meta); err != nil {
						select {
						case errs <- fmt.Errorf("%s on %s: %w", cmd.CommandName(), id, err):
						default:
						}
						break
					}
				}
			}
		})
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return nil, err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return ids, nil
}

// waitProjected waits until the projector's consumer has nothing pending
// or unacknowledged.
func waitProjected(ctx context.Context, js jetstream.JetStream, stream, durable string) error {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		c, err := js.Consumer(ctx, stream, durable)
		if err == nil {
			ci, err := c.Info(ctx)
			if err == nil && ci.NumPending == 0 && ci.NumAckPending == 0 && ci.Delivered.Stream > 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("the projector did not project every record within 10 minutes")
}

// streamBytes returns the state of every stream whose name holds prefix.
func streamBytes(ctx context.Context, js jetstream.JetStream, prefix string) (map[string]jetstream.StreamState, error) {
	out := map[string]jetstream.StreamState{}
	l := js.ListStreams(ctx)
	for info := range l.Info() {
		if strings.Contains(info.Config.Name, prefix) {
			out[info.Config.Name] = info.State
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("list the streams: %w", err)
	}
	return out, nil
}
