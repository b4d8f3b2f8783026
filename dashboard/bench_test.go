package dashboard_test

// Server time of the pages with 1 000 000 indexed records. Run:
//
//	go test -run '^$' -bench 'Pages' -benchtime 100x ./dashboard/
//
// The pages are static files; what they cost the server is the requests
// they make, so each iteration sends those through the real handler
// (server and dashboard) and times their sum.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/dashboard"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

const benchBase = int64(1_796_000_000_000)

// benchView is a generated record, spread over 20 processors, 5 functions
// and 10 error codes, every status and classification.
func benchView(r *rand.Rand, i int) api.View {
	retries := int32(r.IntN(6))
	spec := aggregate.RetrySpec{MaxRetries: int32(r.IntN(6)), MinBackoff: int32(r.IntN(300)), ExecutionTimeout: int32(1 + r.IntN(300))}
	retryAt := benchBase + r.Int64N(3_600_000)
	return api.View{
		State: aggregate.State{
			ID: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "rec-%d", i)).String(),
			EventID: aggregate.EventID{ID: uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "evt-%d", i)).String(),
				AggregateID: aggregate.WireAggregateID{ContextName: fmt.Sprintf("ctx-%d", r.IntN(5)), AggregateName: "order", AggregateID: fmt.Sprintf("order-%08d", i), TenantID: aggregate.DefaultTenantID},
				Version:     uint64(r.IntN(100) + 1)},
			Function: aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: fmt.Sprintf("svc-%d", r.IntN(5)),
				ProcessorName: fmt.Sprintf("Processor%d", r.IntN(20)), Name: fmt.Sprintf("on%d", r.IntN(5))},
			Error:       aggregate.ErrorDetails{ErrorCode: fmt.Sprintf("E%d", r.IntN(10)), ErrorMsg: "boom"},
			ExecuteAt:   retryAt + r.Int64N(10_000),
			RetrySpec:   spec,
			RetryState:  aggregate.RetryState{Retries: retries, RetryAt: retryAt, TimeoutAt: retryAt + int64(spec.ExecutionTimeout)*1000, NextRetryAt: retryAt + int64(spec.MinBackoff)*1000<<retries},
			Status:      aggregate.Statuses[r.IntN(len(aggregate.Statuses))],
			Recoverable: aggregate.Recoverabilities[r.IntN(len(aggregate.Recoverabilities))],
		},
		Version: uint64(r.IntN(20) + 1), UpdatedAt: retryAt, Seq: uint64(i + 1),
	}
}

// eventsStub is an event store without events (the pages benchmarked
// read none).
type eventsStub struct{}

func (eventsStub) GetSeq(context.Context, string, uint64) (eventstore.Stream, error) {
	return eventstore.Stream{}, eventstore.ErrNotFound
}

func (eventsStub) LoadVersion(context.Context, eventstore.AggregateID, uint64) (eventstore.Stream, error) {
	return eventstore.Stream{}, eventstore.ErrNotFound
}

func BenchmarkPages(b *testing.B) {
	const n = 1_000_000
	now := time.UnixMilli(benchBase + 2*3_600_000)
	clock := aggregate.ClockFunc(func() time.Time { return now })
	ix, err := projection.NewIndex(nil, nil, projection.WithClock(clock))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		ix.Put(benchView(r, i))
	}
	d, err := dashboard.New(dashboard.Config{Index: ix, Events: eventsStub{}, Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	h := server.New(server.Config{Queries: ix, Dashboard: d, Clock: clock, ReadYourWrites: -1}).Handler()
	get := func(path string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
	}
	pages := []struct {
		name string
		run  func()
	}{
		// An overview page load: the page and the backlog it fetches; its
		// counts and summary groups come from the live stream's snapshot,
		// computed once for every viewer (overview-refresh).
		{"overview-page", func() {
			get("/")
			get("/ui/v1/backlog")
		}},
		// The shared recompute of the live snapshot (summary with its
		// groups, the six views, the oldest due record), run after a burst
		// of changes or every Refresh, at least 3× its own cost apart.
		{"overview-refresh", func() {
			if _, err := d.Counts(); err != nil {
				b.Fatal(err)
			}
		}},
		// The summary API, for comparison (the overview does not call it).
		{"summary-api", func() { get("/api/v1/summary") }},
		// A filtered search: its first page and its count.
		{"search", func() {
			get("/api/v1/records?processor=Processor7&errorCode=E3&status=FAILED&sort=nextRetryAt&order=desc")
			get("/api/v1/count?processor=Processor7&errorCode=E3&status=FAILED")
		}},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				p.run()
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
