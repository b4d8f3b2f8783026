package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
)

// BenchmarkDeliveries measures notifications delivered per second to a
// local receiver, and the time from a record's event (its stream's
// CreateTime) to its delivery: p50 and p99. "burst": 8 writers create
// records as fast as they can, so the lag is mostly the queue; "paced":
// 400 records a second, below the delivery rate, so the lag is the path.
func BenchmarkDeliveries(b *testing.B) {
	b.Run("burst", func(b *testing.B) { benchDeliveries(b, 0) })
	b.Run("paced", func(b *testing.B) { benchDeliveries(b, 400) })
}

func benchDeliveries(b *testing.B, perSecond int) {
	e := newBenchEnv(b)
	e.svc = aggregate.NewService(e.store) // real time: the lag is measured from CreateTime
	var mu sync.Mutex
	var lags []time.Duration
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body Body
		_ = json.Unmarshal(raw, &body)
		lag := time.Since(time.UnixMilli(body.Time))
		mu.Lock()
		lags = append(lags, lag)
		if len(lags) == b.N {
			close(done)
		}
		mu.Unlock()
		w.WriteHeader(204)
	}))
	b.Cleanup(srv.Close)
	cfg, err := ParseConfig([]byte(`{"allowHosts": ["receiver.test"], "endpoints": [{"name": "ops", "url": "http://receiver.test:`+portOf(srv)+`/", "secrets": [{"env": "S"}]}], "rules": [{"events": ["created"]}]}`),
		func(string) (string, bool) { return goodSecret, true })
	require.NoError(b, err)
	n, err := New(e.js, e.store, e.svc, cfg, WithResolver(testResolver), WithQuarantine(e.quar))
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = n.Run(ctx); close(stopped) }()
	b.Cleanup(func() { cancel(); <-stopped })
	require.Eventually(b, func() bool {
		_, err := e.js.Consumer(ctx, e.store.StreamName(aggregate.Context), DefaultDurable)
		return err == nil
	}, waitLimit, 5*time.Millisecond)

	f := fn("billing", "charge")
	b.ResetTimer()
	start := time.Now()
	var pace <-chan time.Time
	if perSecond > 0 {
		tick := time.NewTicker(time.Second / time.Duration(perSecond)) // shared by the writers
		defer tick.Stop()
		pace = tick.C
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < b.N; i += 8 {
				if pace != nil {
					<-pace
				}
				ev := "evt-" + strconv.Itoa(i)
				_, err := e.svc.Execute(ctx, aggregate.RecordID(ev, f), aggregate.CreateExecutionFailed{
					EventID:  aggregate.EventID{ID: ev, AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: ev, TenantID: aggregate.DefaultTenantID}, Version: 1},
					Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Boom"}, ExecuteAt: time.Now().UnixMilli(),
				}, aggregate.Meta{})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		b.Fatal("not every notification was delivered")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	mu.Lock()
	slices.Sort(lags)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
	mu.Unlock()
}
