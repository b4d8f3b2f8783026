package projection

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/partition"
)

// staticSource holds fixed partitions.
type staticSource []string

func (s staticSource) Held() []string           { return s }
func (s staticSource) Changed() <-chan struct{} { return nil }
func (s staticSource) Places(proc string) bool  { return true }

// BenchmarkPartitionedIndex fills a bucket with N views over 100
// processors (Zipf: a few hold most) and places them on 3 instances with
// partition.Compute. For each instance, it loads an index of its
// partitions (WithPartitions) from the whole bucket, and an index of a
// bucket that holds only its records: the one instance that holds that
// share. It reports the largest instance's records as a multiple of the
// even share, and per instance the heap (settledHeap) and the load time
// of its index of some partitions against the index of its share alone,
// and the raw floor: an ordered consumer's read of the share alone against
// its read of the instance's key patterns and of every key of the whole
// bucket. N is 300 000, then 1 200 000 (either side of filteredLoadKeys;
// about five minutes in all), or the sizes -partitioned-records gives.
// Run:
//
//	go test -run '^$' -bench PartitionedIndex -benchtime 1x ./projection/
//	go test -run '^$' -bench PartitionedIndex -benchtime 1x -timeout 1h ./projection/ -partitioned-records 3000000
func BenchmarkPartitionedIndex(b *testing.B) {
	sizes, err := parseSizes(*partitionedRecords)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) { benchPartitionedIndex(b, n) })
	}
}

var partitionedRecords = flag.String("partitioned-records", "300000,1200000",
	"BenchmarkPartitionedIndex: the numbers of views to run it with, comma-separated, each from 1000 to 20000000")

// parseSizes reads -partitioned-records.
func parseSizes(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 || n > 20_000_000 {
			return nil, fmt.Errorf("-partitioned-records: %q is not a number of views from 1000 to 20000000", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// viewSet is n random views over 100 processors (Zipf: a few hold most),
// encoded, with their processors and ids and the records per processor.
type viewSet struct {
	procs, ids []string
	data       [][]byte
	sizes      map[string]uint64
}

func newViewSet(b *testing.B, n int) *viewSet {
	r := rand.New(rand.NewPCG(3, 3))
	zipf := rand.NewZipf(r, 1.1, 1, 99)
	vs := &viewSet{procs: make([]string, n), ids: make([]string, n), data: make([][]byte, n), sizes: map[string]uint64{}}
	for i := range n {
		v := randomView(r, i)
		v.Seq += 20
		v.State.Function.ProcessorName = fmt.Sprintf("Processor%02d", zipf.Uint64())
		vs.procs[i], vs.ids[i] = v.State.Function.ProcessorName, v.State.ID
		vs.sizes[vs.procs[i]]++
		var err error
		if vs.data[i], err = appendView(&v); err != nil {
			b.Fatal(err)
		}
	}
	return vs
}

// fill writes the views keep keeps to bucket, created if needed.
func (vs *viewSet) fill(b *testing.B, js jetstream.JetStream, bucket string, keep func(i int) bool) *Views {
	kv, err := OpenViews(b.Context(), js, WithBucket(bucket))
	if err != nil {
		b.Fatal(err)
	}
	for i := range vs.ids {
		if !keep(i) {
			continue
		}
		key, err := ViewKey(vs.procs[i], vs.ids[i])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync("$KV."+bucket+"."+key, vs.data[i]); err != nil {
			b.Fatal(err)
		}
		if i%2048 == 2047 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	return kv
}

func benchPartitionedIndex(b *testing.B, n int) {
	js := natstest.New(b).JetStream()
	vs := newViewSet(b, n)
	procs, ids := vs.procs, vs.ids
	instances := []string{"a", "b", "c"}
	plan, err := partition.Compute(vs.sizes, instances, partition.Plan{})
	if err != nil {
		b.Fatal(err)
	}
	fill := func(bucket string, keep func(i int) bool) *Views { return vs.fill(b, js, bucket, keep) }
	all := fill(DefaultBucket, func(int) bool { return true })
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
		rawAlone := rawRead(b, js, alone.Bucket(), nil)
		rawPart := rawRead(b, js, all.Bucket(), KeyFilters(plan.Held(in)))
		rawAll := rawRead(b, js, all.Bucket(), nil)
		b.ReportMetric(rawPart.Seconds()/rawAlone.Seconds(), in+"-raw-filtered/alone")
		b.ReportMetric(rawAll.Seconds()/rawAlone.Seconds(), in+"-raw-all/alone")
		b.Logf("%s: %d records (%.2f of the share), heap %d B (%.0f B a record) against %d B alone, load %s against %s alone; raw: filtered %s, all %s, alone %s",
			in, held, float64(held)/share, heapPart, float64(heapPart)/float64(held), heapAlone, tookPart.Round(time.Millisecond), tookAlone.Round(time.Millisecond),
			rawPart.Round(time.Millisecond), rawAll.Round(time.Millisecond), rawAlone.Round(time.Millisecond))
	}
	b.ReportMetric(largest, "largest/share")
}

// rawRead returns how long an ordered consumer takes to read every
// message of bucket's keys that match patterns (nil: every key), as an
// index's load does, without decoding them.
func rawRead(b *testing.B, js jetstream.JetStream, bucket string, patterns []string) time.Duration {
	subjects := []string{"$KV." + bucket + ".>"}
	if patterns != nil {
		subjects = subjects[:0]
		for _, p := range patterns {
			subjects = append(subjects, "$KV."+bucket+"."+p)
		}
	}
	start := time.Now()
	c, err := js.OrderedConsumer(b.Context(), "KV_"+bucket, jetstream.OrderedConsumerConfig{FilterSubjects: subjects})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	end := sync.OnceFunc(func() { close(done) })
	cc, err := c.Consume(func(m jetstream.Msg) {
		if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
			end()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-b.Context().Done():
		b.Fatal("the read did not end")
	}
	return time.Since(start)
}

// serverCacheExpiry is how long the NATS server keeps a block of a
// stream in memory after its last read (nats-server's
// defaultCacheBufferExpiration, 10s), and a second more.
const serverCacheExpiry = 11 * time.Second

// settledHeap returns the live heap once the blocks the NATS server of the
// process read for the last load have left its cache, after two GCs (the
// first moves what the sync.Pools hold to their victim caches, the second
// frees it). Measured at once, the blocks a filtered load read (every
// block of the bucket) were still cached, and counted as the index's
// once they were freed before the second measure.
func settledHeap(b *testing.B, since time.Time) uint64 {
	select {
	case <-time.After(time.Until(since.Add(serverCacheExpiry))):
	case <-b.Context().Done():
	}
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// loadIndex loads an index of views with opts and returns the heap it
// holds and how long the load took. The heap is the live heap with the
// index less the live heap once it is dropped, both settled
// (settledHeap): the NATS server of the process is in both.
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
	with := settledHeap(b, start.Add(took))
	runtime.KeepAlive(ix)
	ix = nil
	without := settledHeap(b, time.Time{}) // the load's blocks have left the cache
	if without > with {
		return 0, took
	}
	return with - without, took
}
