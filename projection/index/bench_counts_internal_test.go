package index

// Benchmarks of Count, Summary and the id lookups of List per filter kind
// at 10 000 and 1 000 000 records: the two sizes of one query should be
// within 3x of each other. Run:
// go test -run '^$' -bench 'IndexCount|IndexSummaryBy|IndexLookup' -benchtime 3x ./projection/index/
// and the build with -bench IndexBuild -benchtime 1x.

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// withFingerprint gives v the fingerprint of its function and error code,
// as the recorder computes one per failure site.
func withFingerprint(v *api.View) {
	v.State.Error.Fingerprint = "fp-" + v.State.Function.Name + "-" + v.State.Error.ErrorCode
}

var benchNow = time.UnixMilli(base + 1_800_000)

// filterKinds is one filter of each kind the API offers, with values the
// generated records hold.
func filterKinds(ix *Index) []struct {
	name string
	f    api.Filter
} {
	ix.mu.RLock()
	e := ix.slots.at(7)
	id, event, agg := unpackID(e.id), unpackID(e.eventID), e.aggregateID
	ix.mu.RUnlock()
	at := func(min int64) time.Time { return time.UnixMilli(base + min*60_000) }
	out := []struct {
		name string
		f    api.Filter
	}{
		{"id", api.Filter{ID: id}},
		{"eventId", api.Filter{EventID: event}},
		{"aggregateId", api.Filter{AggregateID: agg}},
		{"aggregateContext", api.Filter{AggregateContext: "ctx-1"}},
		{"aggregateType", api.Filter{AggregateType: "agg-3"}},
		{"functionContext", api.Filter{FunctionContext: "svc-2"}},
		{"processor", api.Filter{Processor: "Processor3"}},
		{"function", api.Filter{Function: "on1"}},
		{"functionKind", api.Filter{FunctionKind: aggregate.KindEvent}},
		{"status", api.Filter{Status: aggregate.StatusFailed}},
		{"recoverable", api.Filter{Recoverable: aggregate.Recoverable}},
		{"errorCode", api.Filter{ErrorCode: "E7"}},
		{"fingerprint", api.Filter{Fingerprint: "fp-on1-E7"}},
		{"executeAt", api.Filter{ExecuteAtFrom: at(10), ExecuteAtTo: at(20)}},
		{"nextRetryAt", api.Filter{NextRetryAtFrom: at(10), NextRetryAtTo: at(40)}},
		{"minRetries", api.Filter{MinRetries: 3}},
		{"processor+status+errorCode", api.Filter{Processor: "Processor3", Status: aggregate.StatusFailed, ErrorCode: "E7"}},
		{"processor+executeAt", api.Filter{Processor: "Processor3", ExecuteAtFrom: at(10), ExecuteAtTo: at(20)}},
	}
	for _, v := range aggregate.Views {
		out = append(out, struct {
			name string
			f    api.Filter
		}{"view " + string(v), api.Filter{View: v, Now: benchNow}})
	}
	return out
}

// BenchmarkIndexCount counts each filter kind.
func BenchmarkIndexCount(b *testing.B) {
	for _, q := range filterKinds(benchIndex(benchSizes()[0])) {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/records=%d", q.name, n), func(b *testing.B) {
				ix := benchIndex(n)
				f := filterKinds(ix)
				var filter api.Filter
				for _, k := range f {
					if k.name == q.name {
						filter = k.f
					}
				}
				if _, err := ix.Count(filter); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := ix.Count(filter); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkIndexSummaryBy summarises each filter kind.
func BenchmarkIndexSummaryBy(b *testing.B) {
	for _, q := range filterKinds(benchIndex(benchSizes()[0])) {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/records=%d", q.name, n), func(b *testing.B) {
				ix := benchIndex(n)
				var filter api.Filter
				for _, k := range filterKinds(ix) {
					if k.name == q.name {
						filter = k.f
					}
				}
				b.ResetTimer()
				for range b.N {
					if _, err := ix.Summary(filter); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkIndexLookupList reads the first page of a list filtered only
// by event id or aggregate id.
func BenchmarkIndexLookupList(b *testing.B) {
	for _, name := range []string{"eventId", "aggregateId"} {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/records=%d", name, n), func(b *testing.B) {
				ix := benchIndex(n)
				var q api.Query
				for _, k := range filterKinds(ix) {
					if k.name == name {
						q.Filter = k.f
					}
				}
				if p, err := ix.List(q); err != nil || len(p.Items) == 0 {
					b.Fatalf("list: %d items, err %v", len(p.Items), err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := ix.List(q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkIndexBuild builds an index of 1 000 000 decoded views: what a
// rebuild does after reading the bucket, in bulk (load.go), and, for
// comparison, one view at a time as the watch applies updates
// (BenchmarkRebuild measures the bucket read; BenchmarkIndexMemory the
// heap per record). Target with the read: ≤ 5 s.
func BenchmarkIndexBuild(b *testing.B) {
	const n = 1_000_000
	r := rand.New(rand.NewPCG(3, 3))
	views := make([]api.View, n)
	for i := range views {
		views[i] = randomView(r, i)
		withFingerprint(&views[i])
	}
	for _, bulk := range []bool{true, false} {
		name := "one-by-one"
		if bulk {
			name = "bulk"
		}
		b.Run(name, func(b *testing.B) {
			cpu := cpuTime()
			for range b.N {
				ix := memIndex(time.UnixMilli(base), nil)
				ix.mu.Lock()
				if bulk {
					ix.beginLoad()
				}
				for i := range views {
					ix.put(&views[i])
				}
				if bulk {
					ix.finishLoad()
				}
				ix.mu.Unlock()
				if ix.Len() != n {
					b.Fatalf("index has %d records, want %d", ix.Len(), n)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/1M")
			b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/1M")
		})
	}
}
