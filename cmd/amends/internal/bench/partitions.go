package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// PartitionsConfig configures the bench of serve instances with
// --partitions (amends bench cluster, issue #42).
type PartitionsConfig struct {
	// Exe is the amends binary the instances run (serve, each a process
	// of its own, so that a kill is a kill -9 and each heap its own).
	Exe string
	// Cluster starts a NATS cluster of three servers for one run of
	// processors, and returns its client URLs, a JetStream on it and
	// what stops it.
	Cluster func(ctx context.Context) (urls string, js jetstream.JetStream, stop func(), err error)
	// Records are spread over each count of Processors by a Zipf law
	// (exponent 1.1), and served by each count of Instances.
	Records    int
	Processors []int
	Instances  []int
	// Kills is how many times one instance is killed (SIGKILL) and
	// started again, for each count of instances above one.
	Kills int
	// LeaseTTL is the instances' --lease-ttl.
	LeaseTTL time.Duration
	// Logger reports progress (default: discard).
	Logger *slog.Logger
}

// InstanceRow is one instance of k serving the records of a run.
type InstanceRow struct {
	Processors int    `json:"processors"`
	Instances  int    `json:"instances"`
	Instance   string `json:"instance"`
	// Held is the records its index holds; Share that over the even share
	// (records / instances).
	Held  int     `json:"held"`
	Share float64 `json:"share"`
	// HeapLive is its live heap at a GC while it answered a page of 50
	// (go_gc_heap_live_bytes, see settledHeap); HeapOverAlone is that over
	// the live heap of one instance alone over records/instances views
	// drawn the same way (the issue's "a single instance holding that
	// share"), measured in the same run.
	HeapLive      uint64  `json:"heapLive"`
	HeapOverAlone float64 `json:"heapOverAlone"`
	// Alone is that instance's live heap.
	Alone uint64 `json:"alone"`
	// Up is from its start until /readyz answers 200 (its API listens and
	// its index made its first load, before it holds partitions); Served
	// from the start of all k until every instance answers every record
	// and the plan has not changed for a lease TTL: the start-up of k.
	Up     time.Duration `json:"up"`
	Served time.Duration `json:"served"`
	// Count, Summary and List are the mean latencies of those queries of
	// every record at this instance (List: a page of 50).
	Count   time.Duration `json:"count"`
	Summary time.Duration `json:"summary"`
	List    time.Duration `json:"list"`
}

// KillRow is one kill -9 of an instance of k.
type KillRow struct {
	Processors int    `json:"processors"`
	Instances  int    `json:"instances"`
	Killed     string `json:"killed"`
	// Reserved is from the kill until another instance answers every
	// record again (its partitions are held and loaded elsewhere);
	// LeaseTTL is the bound it rests on.
	Reserved time.Duration `json:"reserved"`
	LeaseTTL time.Duration `json:"leaseTTL"`
	// Rejoined is from the killed instance's new start (same name) until
	// every instance answers every record with the plan settled again.
	Rejoined time.Duration `json:"rejoined"`
}

// PartitionsResult is the bench's figures.
type PartitionsResult struct {
	Records int `json:"records"`
	// Empty is the live heap of an instance without records, the part
	// of every heap that is not the index.
	Empty     uint64        `json:"emptyHeap"`
	Instances []InstanceRow `json:"instances"`
	Kills     []KillRow     `json:"kills"`
	// KillLoop is the kill loop's, when asked for.
	KillLoop *KillLoopResult `json:"killLoop,omitempty"`
}

// queryCalls is how many times each query is timed at each instance.
const queryCalls = 20

// RunPartitions runs the bench: for each count of processors, a new
// cluster, an instance on it without records (the heap that is not the
// index), the views, then each count of instances, and the kills.
func RunPartitions(ctx context.Context, c PartitionsConfig) (PartitionsResult, error) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	res := PartitionsResult{Records: c.Records}
	for _, procs := range c.Processors {
		if err := runProcessors(ctx, c, procs, &res); err != nil {
			return res, fmt.Errorf("%d processors: %w", procs, err)
		}
	}
	return res, nil
}

// runProcessors is the run of one count of processors.
func runProcessors(ctx context.Context, c PartitionsConfig, procs int, res *PartitionsResult) error {
	urls, js, stop, err := c.Cluster(ctx)
	if err != nil {
		return err
	}
	defer stop()
	r := &partitionsRun{c: c, procs: procs, urls: urls, js: js}
	if res.Empty == 0 {
		if res.Empty, err = r.emptyHeap(ctx); err != nil {
			return err
		}
	}
	r.zipf = func() func() string {
		zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(procs), 7)), 1.1, 1, uint64(procs-1))
		return func() string { return fmt.Sprintf("Processor%03d", zipf.Uint64()) }
	}
	for _, k := range c.Instances {
		var alone uint64
		if k > 1 {
			if alone, err = r.aloneAt(ctx, c.Records/k); err != nil {
				return fmt.Errorf("one instance alone over %d records: %w", c.Records/k, err)
			}
		}
		if err := r.fill(ctx, c.Records); err != nil {
			return err
		}
		rows, kills, err := r.serve(ctx, k, alone)
		res.Instances = append(res.Instances, rows...)
		res.Kills = append(res.Kills, kills...)
		if err != nil {
			return fmt.Errorf("%d instances: %w", k, err)
		}
	}
	return nil
}

// partitionsRun is one count of processors on its cluster.
type partitionsRun struct {
	c     PartitionsConfig
	procs int
	urls  string
	js    jetstream.JetStream
	// zipf returns a draw of processor names, the same sequence each time.
	zipf   func() func() string
	filled int // the views in the bucket
}

// fill makes the views bucket hold n views, if it does not already: a new
// bucket as serve makes it (R3, S2), the views' processors drawn by zipf.
func (r *partitionsRun) fill(ctx context.Context, n int) error {
	if r.filled == n {
		return nil
	}
	if err := r.js.DeleteKeyValue(ctx, projection.DefaultBucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return err
	}
	if _, err := projection.OpenViews(ctx, r.js, projection.WithBucketReplicas(3), projection.WithBucketCompression()); err != nil {
		return err
	}
	start := time.Now()
	if err := fillViewsOf(ctx, r.js, projection.DefaultBucket, n, r.zipf()); err != nil {
		return err
	}
	r.filled = n
	r.c.Logger.Info("bench cluster: views written", "records", n, "processors", r.procs, "took", time.Since(start))
	return nil
}

// aloneAt is the live heap of one instance alone over n views.
func (r *partitionsRun) aloneAt(ctx context.Context, n int) (uint64, error) {
	if err := r.fill(ctx, n); err != nil {
		return 0, err
	}
	in, err := spawn(ctx, r.c.Exe, r.urls, "alone", r.c.LeaseTTL)
	if err != nil {
		return 0, err
	}
	defer in.stop()
	if err := r.settle(ctx, []*instance{in}, n); err != nil {
		return 0, err
	}
	_, live, err := in.settledHeap(ctx)
	return live, err
}

// emptyHeap is the live heap of an instance that holds no record.
func (r *partitionsRun) emptyHeap(ctx context.Context) (uint64, error) {
	in, err := spawn(ctx, r.c.Exe, r.urls, "empty", r.c.LeaseTTL)
	if err != nil {
		return 0, err
	}
	defer in.stop()
	if err := r.settle(ctx, []*instance{in}, 0); err != nil {
		return 0, err
	}
	_, live, err := in.settledHeap(ctx)
	return live, err
}

// serve runs k instances over the views, measures them, kills each in
// turn, and stops them. alone is the heap of one instance alone over
// their share (0 for k = 1: they are alone).
func (r *partitionsRun) serve(ctx context.Context, k int, alone uint64) ([]InstanceRow, []KillRow, error) {
	var instances []*instance
	defer func() {
		for _, in := range instances {
			in.stop()
		}
	}()
	start := time.Now()
	instances, up, err := r.start(ctx, k)
	if err != nil {
		return nil, nil, err
	}
	if err := r.settle(ctx, instances, r.c.Records); err != nil {
		return nil, nil, err
	}
	served := time.Since(start)
	rows := make([]InstanceRow, 0, k)
	for i, in := range instances {
		row, err := r.measure(ctx, in, k)
		if err != nil {
			return nil, nil, err
		}
		row.Up, row.Served = up[i], served
		row.Alone, row.HeapOverAlone = alone, 1
		if alone > 0 {
			row.HeapOverAlone = float64(row.HeapLive) / float64(alone)
		}
		rows = append(rows, row)
		r.c.Logger.Info("bench cluster: instance", "processors", r.procs, "instances", k, "instance", in.name, "held", row.Held, "heap", row.HeapLive, "up", row.Up)
	}
	var kills []KillRow
	for round := range r.c.Kills {
		if k < 2 {
			break
		}
		kr, err := r.killOne(ctx, instances, round%k)
		kills = append(kills, kr)
		if err != nil {
			return rows, kills, err
		}
	}
	return rows, kills, nil
}

// start spawns k instances and returns them, with the time each took
// until its API was up.
func (r *partitionsRun) start(ctx context.Context, k int) ([]*instance, []time.Duration, error) {
	instances := make([]*instance, 0, k)
	for i := range k {
		in, err := spawn(ctx, r.c.Exe, r.urls, fmt.Sprintf("i%d", i), r.c.LeaseTTL)
		if err != nil {
			return instances, nil, err
		}
		instances = append(instances, in)
	}
	up := make([]time.Duration, k)
	for i, in := range instances {
		if err := wait.Until(ctx, "instance "+in.name+" up", 50*time.Millisecond, 10*time.Minute, func() bool { return in.ready(ctx) }); err != nil {
			return instances, nil, err
		}
		up[i] = time.Since(in.started)
	}
	return instances, up, nil
}

// settle waits until every instance answers n records and the plan has
// not changed for a lease TTL (three rounds of the coordinator).
func (r *partitionsRun) settle(ctx context.Context, instances []*instance, n int) error {
	plans, err := scheduler.OpenPartitions(ctx, r.js, 3) // as the instances made it (--replicas 3)
	if err != nil {
		return err
	}
	var rev uint64
	var since time.Time
	return wait.Until(ctx, fmt.Sprintf("%d instances answer %d records with the plan settled", len(instances), n), 50*time.Millisecond, 10*time.Minute, func() bool {
		for _, in := range instances {
			if !in.answersAll(ctx, n) {
				return false
			}
		}
		_, now, err := plans.Get(ctx, "plan")
		if err != nil && n > 0 {
			return false
		}
		if now != rev {
			rev, since = now, time.Now()
		}
		return time.Since(since) >= r.c.LeaseTTL
	})
}

// measure samples an instance's records and heap and times its queries.
func (r *partitionsRun) measure(ctx context.Context, in *instance, k int) (InstanceRow, error) {
	row := InstanceRow{Processors: r.procs, Instances: k, Instance: in.name}
	var err error
	timed := func(call func() error) (time.Duration, error) {
		start := time.Now()
		for range queryCalls {
			if err := call(); err != nil {
				return 0, fmt.Errorf("instance %s: %w", in.name, err)
			}
		}
		return time.Since(start) / queryCalls, nil
	}
	if row.Count, err = timed(func() error { _, err := in.client.Count(ctx, api.Filter{}); return err }); err != nil {
		return row, err
	}
	if row.Summary, err = timed(func() error { _, err := in.client.Summary(ctx, api.Filter{}); return err }); err != nil {
		return row, err
	}
	if row.List, err = timed(func() error { _, err := in.client.List(ctx, api.Query{Limit: 50}); return err }); err != nil {
		return row, err
	}
	row.Held, row.HeapLive, err = in.settledHeap(ctx)
	row.Share = float64(row.Held) * float64(k) / float64(r.c.Records)
	return row, err
}

// killOne kills instances[i] with SIGKILL, times until another instance
// answers every record, then starts it again under its name and times
// until the plan has settled with it.
func (r *partitionsRun) killOne(ctx context.Context, instances []*instance, i int) (KillRow, error) {
	victim := instances[i]
	kr := KillRow{Processors: r.procs, Instances: len(instances), Killed: victim.name, LeaseTTL: r.c.LeaseTTL}
	survivor := instances[(i+1)%len(instances)]
	victim.kill()
	killed := time.Now()
	err := wait.Until(ctx, "the killed instance's partitions served again", 20*time.Millisecond, 10*time.Minute, func() bool {
		return survivor.answersAll(ctx, r.c.Records)
	})
	if err != nil {
		return kr, err
	}
	kr.Reserved = time.Since(killed)
	again, err := spawn(ctx, r.c.Exe, r.urls, victim.name, r.c.LeaseTTL)
	if err != nil {
		return kr, err
	}
	instances[i] = again
	if err := r.settle(ctx, instances, r.c.Records); err != nil {
		return kr, err
	}
	kr.Rejoined = time.Since(again.started)
	r.c.Logger.Info("bench cluster: kill", "instances", len(instances), "killed", victim.name, "served again", kr.Reserved, "rejoined", kr.Rejoined)
	return kr, nil
}
