package bench_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/bench"
	"github.com/amends-dev/amends/internal/natstest"
)

// Every scenario runs and yields figures; the figures themselves are never
// asserted.
func TestEveryScenarioRunsAndProducesARatio(t *testing.T) {
	js := natstest.New(t).JetStream()
	r := &bench.Runner{
		Env:      &bench.Env{JS: js, Storage: jetstream.MemoryStorage, Concurrency: 2, Prefix: "t", Quick: true},
		Duration: 200 * time.Millisecond,
	}
	results, err := r.Run(t.Context(), bench.Scenarios())
	require.NoError(t, err)
	require.Len(t, results, len(bench.Scenarios()))
	for _, res := range results {
		assert.Positive(t, res.Amends.Ops, "%s: the amends side ran", res.Scenario)
		assert.Positive(t, res.Amends.P50, "%s: latencies were recorded", res.Scenario)
		if res.Raw != nil {
			assert.Positive(t, res.Raw.Ops, "%s: the raw side ran", res.Scenario)
			assert.Positive(t, res.Ratio, "%s: a ratio was computed", res.Scenario)
		}
	}
	names := js.StreamNames(t.Context())
	for n := range names.Name() {
		t.Errorf("stream %s was left behind", n)
	}
	require.NoError(t, names.Err())
}

func TestSelect(t *testing.T) {
	got, err := bench.Select([]string{"load", "append"})
	require.NoError(t, err)
	assert.Equal(t, "load", got[0].Name)
	_, err = bench.Select([]string{"nope"})
	assert.ErrorContains(t, err, `unknown scenario "nope"; known scenarios: api, append, command, count, dispatch, dispatch-ordered, due, e2e, list, load, record, record-rules, replay, summary`)
}

func runScenarios(t *testing.T, env *bench.Env, d time.Duration, names ...string) []bench.Result {
	t.Helper()
	scenarios, err := bench.Select(names)
	require.NoError(t, err)
	results, err := (&bench.Runner{Env: env, Duration: d}).Run(t.Context(), scenarios)
	require.NoError(t, err)
	require.Len(t, results, len(names))
	return results
}

// The api scenario's row is its requests (600 in each second of load),
// not the seconds of load themselves.
func TestAPIReportsItsRequests(t *testing.T) {
	js := natstest.New(t).JetStream()
	env := &bench.Env{JS: js, Storage: jetstream.MemoryStorage, Concurrency: 1, Prefix: "t", Quick: true}
	res := runScenarios(t, env, time.Second, "api")[0]
	assert.Equal(t, "requests", res.Amends.Side)
	require.Positive(t, res.Amends.Ops)
	assert.Zero(t, res.Amends.Ops%600, "every second of load sends 600 requests, got %d", res.Amends.Ops)
	assert.Greater(t, res.Amends.PerSec, 1.0, "the rate is of requests, not of seconds of load")
}
