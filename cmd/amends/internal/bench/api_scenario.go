package bench

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

// The sustained load of the api scenario, per second.
const (
	apiCommandsPerSec = 500
	apiListsPerSec    = 100
)

// An api operation is one second of load (one at a time, whatever the
// number of workers) on the HTTP API of a running
// control plane (projector, index, server): 500 commands (ApplyRetrySpec
// on existing records) and 100 filtered list pages, sent on schedule
// whatever the answers take (open loop). The notes give the rates reached
// and each kind's p50 and p99. The table shows the requests: their rate (600 a second when
// the server keeps up, less when it falls behind), p50 and p99.
func prepareAPI(ctx context.Context, env *Env) (*Pair, error) {
	r, err := newRig(ctx, env, "api")
	if err != nil {
		return nil, err
	}
	names := "bench_" + env.Prefix + "_api"
	views, err := projection.OpenViews(ctx, env.JS, projection.WithBucket(names+"_views"), projection.WithBucketStorage(env.Storage))
	if err != nil {
		r.close()
		return nil, err
	}
	closeAll := func() {
		_ = env.JS.DeleteKeyValue(context.Background(), names+"_views")
		r.close()
	}
	proj, err := projection.NewProjector(env.JS, r.store, views, projection.WithDurable(names), projection.WithLogger(discard))
	if err != nil {
		closeAll()
		return nil, err
	}
	index, err := projection.NewIndex(views, r.store)
	if err != nil {
		closeAll()
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{proj.Run, index.Run} {
		wg.Go(func() { _ = run(bg) })
	}
	stop := func() { cancel(); wg.Wait(); closeAll() }
	const records = 300 // each takes a command every 0.6 s: conflicts stay rare
	ids := make([]string, records)
	var last aggregate.Result
	for i := range ids {
		if last, err = r.records.Execute(ctx, fmt.Sprintf("api-%d", i), benchCreate("api", 0, i), aggregate.Meta{}); err != nil {
			stop()
			return nil, err
		}
		ids[i] = last.ID
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = index.WaitFor(wctx, last.ID, last.Version)
	wcancel()
	if err != nil {
		stop()
		return nil, err
	}
	api := httptest.NewServer(server.New(server.Config{Queries: index, Commands: r.records, Logger: discard}).Handler())
	c, err := client.New(api.URL, "", nil)
	if err != nil {
		api.Close()
		stop()
		return nil, err
	}
	notes := map[string]float64{}
	var cmds, lists []time.Duration
	var elapsed time.Duration
	var mu, one sync.Mutex // one: a single second of load at a time, whatever the workers
	return &Pair{
		AmendsName: "requests",
		Notes:      notes,
		Close:      func() { api.Close(); stop() },
		Finish: func(m *Measurement) {
			mu.Lock()
			defer mu.Unlock()
			summarise(notes, "command", cmds, elapsed)
			summarise(notes, "list", lists, elapsed)
			requestRates(m, slices.Concat(cmds, lists), elapsed)
		},
		Amends: func(ctx context.Context, w, i int) error {
			one.Lock()
			defer one.Unlock()
			start := time.Now()
			c1, l1, err := oneSecondOfLoad(ctx, c, ids, i)
			mu.Lock()
			cmds, lists, elapsed = append(cmds, c1...), append(lists, l1...), elapsed+time.Since(start)
			mu.Unlock()
			return err
		},
	}, nil
}

// oneSecondOfLoad sends the scheduled commands and lists of one second
// and returns their latencies once all have answered.
func oneSecondOfLoad(ctx context.Context, c *client.Client, ids []string, round int) (cmds, lists []time.Duration, err error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	total := apiCommandsPerSec + apiListsPerSec
	start := time.Now()
	for k := range total {
		at := start.Add(time.Duration(k) * time.Second / time.Duration(total))
		time.Sleep(time.Until(at))
		isList := k%(total/apiListsPerSec) == 0
		wg.Go(func() {
			t := time.Now()
			var err error
			if isList {
				_, err = c.List(ctx, api.Query{Filter: api.Filter{Processor: "Mailer", Status: aggregate.StatusFailed}, Limit: 50})
			} else {
				id := ids[(round*total+k)%len(ids)]
				_, err = c.ChangeRetrySpec(ctx, id, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: int32(30 + k%2)}, client.CommandOptions{})
			}
			d := time.Since(t)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case isList:
				lists = append(lists, d)
			default:
				cmds = append(cmds, d)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return cmds, lists, fmt.Errorf("%d of %d requests failed, the first: %w", len(errs), total, errs[0])
	}
	return cmds, lists, nil
}

// requestRates makes m the figures of the requests rather than of the
// seconds of load: their rate over the time the load took, p50 and p99.
func requestRates(m *Measurement, lat []time.Duration, elapsed time.Duration) {
	m.Ops = len(lat)
	m.Elapsed = elapsed
	m.PerSec, m.P50, m.P99 = 0, 0, 0
	if len(lat) == 0 || elapsed == 0 {
		return
	}
	slices.Sort(lat)
	m.PerSec = float64(len(lat)) / elapsed.Seconds()
	m.P50 = lat[len(lat)/2]
	m.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
}

// summarise adds the rate, p50 and p99 (ms) of one kind of request.
func summarise(notes map[string]float64, kind string, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 || elapsed == 0 {
		return
	}
	slices.Sort(lat)
	notes[kind+"s/s"] = float64(len(lat)) / elapsed.Seconds()
	notes[kind+" p50 ms"] = float64(lat[len(lat)/2].Microseconds()) / 1000
	notes[kind+" p99 ms"] = float64(lat[len(lat)*99/100].Microseconds()) / 1000
}
