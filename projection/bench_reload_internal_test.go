package projection

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/partition"
)

// movingSource holds partitions that a benchmark changes.
type movingSource struct {
	mu      sync.Mutex
	held    []string
	changed chan struct{}
}

func (s *movingSource) Held() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *movingSource) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *movingSource) Places(string) bool { return true }

func (s *movingSource) set(held []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = held
	close(s.changed)
	s.changed = make(chan struct{})
}

// BenchmarkPartitionReload measures what follows the death of one of
// three instances for a survivor: its index of some partitions, loaded
// and following, is given the partitions of the plan of the two
// survivors (partition.Compute from the plan of three). It reports the
// time until the index holds its new partitions, without snapshots (a
// reload: it keeps the partitions it held and reads the history of the
// new ones) and with the snapshots the dead instance saved of its
// partitions, against the load of an index of those partitions from
// nothing; and the records the survivor holds before and after. The
// sizes are those of BenchmarkPartitionedIndex (-partitioned-records).
// Run:
//
//	go test -run '^$' -bench PartitionReload -benchtime 1x ./projection/
func BenchmarkPartitionReload(b *testing.B) {
	sizes, err := parseSizes(*partitionedRecords)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) { benchPartitionReload(b, n) })
	}
}

func benchPartitionReload(b *testing.B, n int) {
	js := natstest.New(b).JetStream()
	vs := newViewSet(b, n)
	three, err := partition.Compute(vs.sizes, []string{"a", "b", "c"}, partition.Plan{})
	if err != nil {
		b.Fatal(err)
	}
	two, err := partition.Compute(vs.sizes, []string{"a", "b"}, three)
	if err != nil {
		b.Fatal(err)
	}
	views := vs.fill(b, js, DefaultBucket, func(int) bool { return true })
	snaps, err := OpenSnapshots(b.Context(), js, WithMaxSnapshotBytes(1<<30))
	if err != nil {
		b.Fatal(err)
	}
	// The instance that dies saved the snapshots of its partitions.
	dead := runPartitioned(b, views, &movingSource{held: sorted(three.Held("c")), changed: make(chan struct{})}, WithSnapshots(snaps, MaxSnapshotEvery))
	if _, err := dead.ix.SaveSnapshot(b.Context()); err != nil {
		b.Fatal(err)
	}
	dead.stop()
	before, after := sorted(three.Held("a")), sorted(two.Held("a"))
	_, fresh := loadIndex(b, views, WithPartitions(staticSource(after)))
	b.ReportMetric(fresh.Seconds(), "fresh-s")
	for _, mode := range []struct {
		name string
		opts []IndexOption
	}{
		{name: "reload"},
		{name: "reload-from-snapshots", opts: []IndexOption{WithSnapshots(snaps, MaxSnapshotEvery)}},
	} {
		src := &movingSource{held: before, changed: make(chan struct{})}
		survivor := runPartitioned(b, views, src, mode.opts...)
		heldBefore := survivor.ix.Len()
		start := time.Now()
		src.set(after)
		survivor.holds(b, after)
		took := time.Since(start)
		b.ReportMetric(took.Seconds()/fresh.Seconds(), mode.name+"/fresh")
		b.ReportMetric(float64(survivor.ix.Len())/float64(heldBefore), "records-after/before")
		b.Logf("%s: a survivor held %d records, then %d: it took %s, the load of those partitions from nothing %s",
			mode.name, heldBefore, survivor.ix.Len(), took.Round(time.Millisecond), fresh.Round(time.Millisecond))
		survivor.stop()
	}
}

func sorted(ids []string) []string { return slices.Sorted(slices.Values(ids)) }

// running is an index of some partitions that runs.
type running struct {
	ix   *Index
	stop func()
}

// runPartitioned runs an index of views of the partitions src holds,
// with opts, until it holds them.
func runPartitioned(b *testing.B, views *Views, src PartitionSource, opts ...IndexOption) running {
	ix, err := NewIndex(views, nil, append([]IndexOption{WithPartitions(src)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	r := running{ix: ix, stop: sync.OnceFunc(func() { cancel(); <-done })}
	b.Cleanup(r.stop)
	r.holds(b, src.Held())
	return r
}

// holds waits until the index holds partitions want.
func (r running) holds(b *testing.B, want []string) {
	for {
		if got, ok := r.ix.Partitions(); ok && slices.Equal(got, want) {
			return
		}
		select {
		case <-b.Context().Done():
			b.Fatal("the index did not load its partitions")
		case <-time.After(time.Millisecond):
		}
	}
}
