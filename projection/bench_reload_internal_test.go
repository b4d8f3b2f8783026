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
// time until the index holds its new partitions (a reload: it keeps the
// partitions it held and reads the history of the new ones) against the
// load of an index of those partitions from nothing, and the records the
// survivor holds before and after. The sizes are those of
// BenchmarkPartitionedIndex (-partitioned-records). Run:
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
	before, after := slices.Sorted(slices.Values(three.Held("a"))), slices.Sorted(slices.Values(two.Held("a")))
	src := &movingSource{held: before, changed: make(chan struct{})}
	ix, err := NewIndex(views, nil, WithPartitions(src))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	defer func() { cancel(); <-done }()
	holds := func(want []string) {
		for {
			if got, ok := ix.Partitions(); ok && slices.Equal(got, want) {
				return
			}
			select {
			case <-b.Context().Done():
				b.Fatal("the index did not load its partitions")
			case <-time.After(time.Millisecond):
			}
		}
	}
	holds(before)
	heldBefore := ix.Len()
	start := time.Now()
	src.set(after)
	holds(after)
	reload := time.Since(start)
	_, fresh := loadIndex(b, views, WithPartitions(staticSource(after)))
	b.ReportMetric(reload.Seconds()/fresh.Seconds(), "reload/fresh")
	b.ReportMetric(float64(ix.Len())/float64(heldBefore), "records-after/before")
	b.Logf("a survivor held %d records, then %d: its reload took %s, the load of those partitions from nothing %s",
		heldBefore, ix.Len(), reload.Round(time.Millisecond), fresh.Round(time.Millisecond))
}
