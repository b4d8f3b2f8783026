package index

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSnapshot writes and restores a snapshot of an index of 10 k,
// 100 k and -index-records records, with the index's heap per record;
// compare the restore with the write (the restore builds every
// structure, as a bulk load does).
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{10_000, 100_000, *indexRecords} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ix := memIndex(benchNow, nil)
		r := rand.New(rand.NewPCG(uint64(n), 1))
		ix.mu.Lock()
		ix.beginLoad()
		for i := range n {
			v := randomView(r, i)
			withFingerprint(&v)
			ix.put(&v)
		}
		ix.finishLoad()
		ix.mu.Unlock()
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		data, err := ix.AppendSnapshot(nil, SnapshotInfo{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("write/records=%d", n), func(b *testing.B) {
			buf := make([]byte, 0, len(data))
			for range b.N {
				if _, err := ix.AppendSnapshot(buf, SnapshotInfo{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(n), "bytes/record")
			b.ReportMetric(heap, "heap-bytes/record")
		})
		b.Run(fmt.Sprintf("restore/records=%d", n), func(b *testing.B) {
			for range b.N {
				got, _, err := restore(b, func() time.Time { return benchNow }, data)
				if err != nil || got.Len() != n {
					b.Fatalf("restored %d records, err %v", got.Len(), err)
				}
			}
		})
	}
}
