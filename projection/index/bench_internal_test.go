package index

// Index benchmarks. Run: go test -run '^$' -bench 'Index' -benchtime 1x ./projection/index/
// (the 1 000 000-record index takes a few seconds to build, once per size).

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

var (
	benchMu      sync.Mutex
	benchIndexes = map[int]*Index{}
)

// benchIndex returns an index of n generated records, built once per n.
func benchIndex(n int) *Index {
	benchMu.Lock()
	defer benchMu.Unlock()
	if ix, ok := benchIndexes[n]; ok {
		return ix
	}
	ix := memIndex(benchNow, nil) // the index's now is the queries' (see Index.Count)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	ix.mu.Lock()
	ix.beginLoad() // in bulk, as a start-up loads (the same index, load.go)
	for i := range n {
		v := randomView(r, i)
		withFingerprint(&v)
		ix.put(&v)
	}
	ix.finishLoad()
	ix.mu.Unlock()
	benchIndexes[n] = ix
	return ix
}

// BenchmarkIndexMemory reports the heap the index holds per record at
// 1 000 000 records (target ≤ 512 bytes), loaded in bulk as a rebuild
// does and one by one as the watch applies updates.
func BenchmarkIndexMemory(b *testing.B) {
	const n = 1_000_000
	for _, bulk := range []bool{true, false} {
		name := "one-by-one"
		if bulk {
			name = "bulk"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				ix := memIndex(time.UnixMilli(base), nil)
				r := rand.New(rand.NewPCG(9, 9))
				ix.mu.Lock()
				if bulk {
					ix.beginLoad()
				}
				for i := range n {
					v := randomView(r, i)
					ix.put(&v)
				}
				if bulk {
					ix.finishLoad()
				}
				ix.mu.Unlock()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/record")
				runtime.KeepAlive(ix)
			}
		})
	}
}

// indexRecords sizes the large index of the benchmarks: -index-records
// 10000000 measures 10 M next to 10 k.
var indexRecords = flag.Int("index-records", 1_000_000, "records of the large index of the index benchmarks")

// benchSizes are the two index sizes the benchmarks compare.
func benchSizes() []int { return []int{10_000, *indexRecords} }

// BenchmarkIndexDue takes a due batch of 100 when most unfinished records
// are due; compare the two sizes (target: 1M within 3x of 10k).
func BenchmarkIndexDue(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ix := benchIndex(n)
			now := time.UnixMilli(base + 2*3_600_000)
			if got := len(ix.Due(now, 100)); got != 100 {
				b.Fatalf("Due returned %d records, want 100", got)
			}
			b.ResetTimer()
			for range b.N {
				ix.Due(now, 100)
			}
		})
	}
}

// BenchmarkIndexList reads the first page of 50 and a later page of
// filtered lists; compare the two sizes.
func BenchmarkIndexList(b *testing.B) {
	queries := map[string]api.Query{
		"processor+status": {Filter: api.Filter{Processor: "Processor3", Status: aggregate.StatusFailed}, Sort: api.Sort{Field: api.SortNextRetryAt}},
		"view to-retry":    {Filter: api.Filter{View: aggregate.ViewToRetry}, Sort: api.Sort{Field: api.SortExecuteAt, Desc: true}},
		"error code":       {Filter: api.Filter{ErrorCode: "E7", MinRetries: 2}, Sort: api.Sort{Field: api.SortRetries, Desc: true}},
	}
	for _, name := range []string{"processor+status", "view to-retry", "error code"} {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/records=%d", name, n), func(b *testing.B) {
				ix := benchIndex(n)
				q := queries[name]
				q.Limit = 50
				first, err := ix.List(q)
				if err != nil || len(first.Items) != 50 || first.Next == "" {
					b.Fatalf("first page: %d items, err %v", len(first.Items), err)
				}
				b.ResetTimer()
				for i := range b.N {
					if i%2 == 1 {
						q.Cursor = first.Next // every other page is the second one
					} else {
						q.Cursor = ""
					}
					if _, err := ix.List(q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkIndexSummary is the dashboard's summary of every record;
// compare the two sizes (target: 1M within 3x of 10k).
func BenchmarkIndexSummary(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ix := benchIndex(n)
			b.ResetTimer()
			for range b.N {
				if _, err := ix.Summary(api.Filter{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
