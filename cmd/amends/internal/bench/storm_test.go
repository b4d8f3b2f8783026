package bench_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/cmd/amends/internal/bench"
)

// A short storm loses nothing and re-runs nothing: every event reached
// every function with success in the end, no function that succeeded on
// an event was called on it again, the failing function's live calls stay
// within one call and its immediate retries per event, and every record
// belongs to an event of the outage. Its latencies are never asserted.
func TestStormLosesAndRerunsNothing(t *testing.T) {
	env := newEnv(t, 1)
	c := bench.StormConfig{Rate: 100, Before: 300 * time.Millisecond, Outage: 700 * time.Millisecond, ImmediateRetries: 2,
		RetryWait: 20 * time.Millisecond, SchedulerPeriod: 50 * time.Millisecond, Drain: time.Minute}
	res, err := bench.RunStorm(t.Context(), env, c)
	require.NoError(t, err)
	require.Equal(t, 100, res.Events)
	assert.GreaterOrEqual(t, res.RecoverySeconds, 0.0, "every event succeeded on every function within the drain")
	for _, f := range bench.StormFunctions {
		assert.Equal(t, res.Events, res.Succeeded[f], "%s succeeded on every event", f)
		assert.Zero(t, res.Reruns[f], "%s was not called again on an event it had succeeded on", f)
	}
	assert.Equal(t, uint64(res.Events), res.Calls["Mailer.audit"], "the sibling: one call per event")
	assert.Equal(t, uint64(res.Events), res.Calls["Ledger.post"], "the other processor: one call per event")
	live := res.Calls["Mailer.send"] - res.ReplayCalls["Mailer.send"]
	assert.LessOrEqual(t, live, uint64(res.Events*(1+c.ImmediateRetries)), "send's live calls: at most one and its retries per event")
	assert.Positive(t, res.RecordsCreated, "the outage's failures were recorded")
	assert.LessOrEqual(t, res.RecordsCreated, uint64(res.Events), "at most one record per event")
	// Which events meet the outage depends on how far delivery lags on a
	// loaded machine, so the records are checked one by one, not counted
	// against the outage's length.
	assert.Zero(t, res.StrayRecords, "only the events that met the outage, or a refusal, have records")
	assert.Positive(t, res.Sibling.Before.N)
	assert.Positive(t, res.Sibling.During.N)
}

// Bad events alone, half of them, replayed again and again by a fast
// scheduler: the default circuit never moves, no healthy event is refused
// or recorded, each healthy one is called once, each bad one has one
// record.
func TestStormOfBadEventsNeverTrips(t *testing.T) {
	env := newEnv(t, 1)
	c := bench.StormConfig{Rate: 100, Before: 1500 * time.Millisecond, ImmediateRetries: 0, BadEvents: 50,
		SchedulerPeriod: 50 * time.Millisecond, Drain: time.Second}
	res, err := bench.RunStorm(t.Context(), env, c)
	require.NoError(t, err)
	require.Equal(t, 150, res.Events)
	require.Positive(t, res.BadEvents)
	assert.Empty(t, res.Transitions, "no transition of the circuit")
	assert.Zero(t, res.FalseOpens)
	assert.Zero(t, res.HealthyRefused)
	assert.Zero(t, res.HealthyRecorded)
	assert.Zero(t, res.StrayRecords)
	assert.Zero(t, res.Refused["Mailer.send"])
	assert.Equal(t, res.Events-res.BadEvents, res.Succeeded["Mailer.send"], "every healthy event succeeded")
	assert.Equal(t, uint64(res.BadEvents), res.RecordsCreated, "one record per bad event")
	assert.Positive(t, res.ReplayCalls["Mailer.send"], "the bad records were replayed meanwhile")
	live := res.Calls["Mailer.send"] - res.ReplayCalls["Mailer.send"]
	assert.Equal(t, uint64(res.Events), live, "each event called once live")
}

// With a dashboard listener, the storm's control plane is served while
// it runs: the API lists the circuit of the failing function, and the
// incident view's page is there.
func TestStormServesItsDashboard(t *testing.T) {
	env := newEnv(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := bench.StormConfig{Rate: 100, Before: 300 * time.Millisecond, Outage: 3 * time.Second, ImmediateRetries: 0,
		SchedulerPeriod: 50 * time.Millisecond, Drain: time.Minute, Dashboard: l,
		Circuit: circuit.Policy{CoolDown: 500 * time.Millisecond}}
	done := make(chan error, 1)
	go func() { _, err := bench.RunStorm(t.Context(), env, c); done <- err }()
	base := "http://" + l.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		code, body := get("/api/v1/circuits")
		return code == http.StatusOK && strings.Contains(body, `"function":"orders.Mailer.send"`)
	}, 30*time.Second, 20*time.Millisecond, "the API lists the failing function's circuit during the storm")
	code, body := get("/circuits/orders.Mailer.send")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "circuit.js", "the incident view")
	require.NoError(t, <-done)
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the dashboard stops with the storm")
}
