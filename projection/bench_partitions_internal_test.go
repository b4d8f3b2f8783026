package projection

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/partition"
)

// staticSource holds fixed partitions.
type staticSource []string

func (s staticSource) Held() []string           { return s }
func (s staticSource) Changed() <-chan struct{} { return nil }
func (s staticSource) Places(proc string) bool  { return true }

// BenchmarkPartitionedIndex fills a bucket with N views (300 000, then
// 1 000 000: about a minute and a half) over 100
// processors (Zipf: a few hold most) and places them on 3 instances with
// partition.Compute. For each instance, it loads an index of its
// partitions (WithPartitions) from the whole bucket, and an index of a
// bucket that holds only its records: the one instance that holds that
// share. It reports the largest instance's records as a multiple of the
// even share, and per instance the heap (live, after a GC) and the load
// time of its index of some partitions against the index of its share
// alone. Run: go test -run '^$' -bench PartitionedIndex -benchtime 1x ./projection/
func BenchmarkPartitionedIndex(b *testing.B) {
	for _, n := range []int{300_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) { benchPartitionedIndex(b, n) })
	}
}

func benchPartitionedIndex(b *testing.B, n int) {
	js := natstest.New(b).JetStream()
	ctx := b.Context()
	all, err := OpenViews(ctx, js)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	zipf := rand.NewZipf(r, 1.1, 1, 99)
	procs := make([]string, n)
	sizes := map[string]uint64{}
	ids := make([]string, n)
	data := make([][]byte, n)
	for i := range n {
		v := randomView(r, i)
		v.Seq += 20
		v.State.Function.ProcessorName = fmt.Sprintf("Processor%02d", zipf.Uint64())
		procs[i], ids[i] = v.State.Function.ProcessorName, v.State.ID
		sizes[procs[i]]++
		if data[i], err = appendView(&v); err != nil {
			b.Fatal(err)
		}
	}
	instances := []string{"a", "b", "c"}
	plan, err := partition.Compute(sizes, instances, partition.Plan{})
	if err != nil {
		b.Fatal(err)
	}
	fill := func(bucket string, keep func(i int) bool) *Views {
		kv, err := OpenViews(ctx, js, WithBucket(bucket))
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if !keep(i) {
				continue
			}
			key, err := ViewKey(procs[i], ids[i])
			if err != nil {
				b.Fatal(err)
			}
			if _, err := js.PublishAsync("$KV."+bucket+"."+key, data[i]); err != nil {
				b.Fatal(err)
			}
			if i%2048 == 2047 {
				<-js.PublishAsyncComplete()
			}
		}
		<-js.PublishAsyncComplete()
		return kv
	}
	fill(DefaultBucket, func(int) bool { return true })
	share := float64(n) / float64(len(instances))
	largest := 0.0
	for _, in := range instances {
		owner := func(i int) bool { return plan.Owners[plan.Of(procs[i], ids[i])] == in }
		alone := fill("views_"+in, owner)
		held := 0
		for i := range n {
			if owner(i) {
				held++
			}
		}
		largest = max(largest, float64(held)/share)
		heapPart, tookPart := loadIndex(b, all, WithPartitions(staticSource(slices.Sorted(slices.Values(plan.Held(in))))))
		heapAlone, tookAlone := loadIndex(b, alone)
		b.ReportMetric(float64(heapPart)/float64(heapAlone), in+"-heap/alone")
		b.ReportMetric(tookPart.Seconds()/tookAlone.Seconds(), in+"-load/alone")
		b.ReportMetric(float64(held)/share, in+"-records/share")
		b.Logf("%s: %d records (%.2f of the share), heap %d B (%.0f B a record) against %d B alone, load %s against %s alone",
			in, held, float64(held)/share, heapPart, float64(heapPart)/float64(held), heapAlone, tookPart.Round(time.Millisecond), tookAlone.Round(time.Millisecond))
	}
	b.ReportMetric(largest, "largest/share")
}

// loadIndex loads an index of views with opts and returns the heap it
// holds and how long the load took. The heap is the live heap with the
// index less the live heap once it is dropped, both read after a GC, back
// to back: the NATS server of the process, and its caches, are in both.
func loadIndex(b *testing.B, views *Views, opts ...IndexOption) (uint64, time.Duration) {
	ix, err := NewIndex(views, nil, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- ix.Run(ctx) }()
	<-ix.Ready()
	took := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if ix.Len() == 0 {
		b.Fatal("the index holds no record")
	}
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(ix)
	ix = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	return with.HeapAlloc - without.HeapAlloc, took
}
