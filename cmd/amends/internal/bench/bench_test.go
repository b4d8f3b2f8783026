package bench_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
	"github.com/amends-dev/amends/internal/natstest"
)

// Every scenario runs and yields figures; the figures themselves are never
// asserted.
func TestEveryScenarioRunsAndProducesARatio(t *testing.T) {
	env := newEnv(t, 2)
	js := env.JS
	r := &bench.Runner{Env: env, Duration: 200 * time.Millisecond}
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
		if res.Floor != nil {
			assert.Positive(t, res.Floor.Ops, "%s: the floor side ran", res.Scenario)
			assert.Positive(t, res.FloorRatio, "%s: a ratio to the floor was computed", res.Scenario)
		}
		if res.Scenario == "record" {
			require.NotNil(t, res.Floor, "record measures raw doing the same work")
			assert.Equal(t, "raw, same work", res.Floor.Side)
		}
		if res.Scenario == "replay" {
			assert.NotNil(t, res.Floor, "replay measures raw with a record's bytes")
			assert.Greater(t, res.Notes["bytes of a record's message"], 500.0, "the size of a record's message is noted")
		}
		if res.Peer != nil {
			assert.Positive(t, res.Peer.Ops, "%s: the peer side ran", res.Scenario)
			assert.Positive(t, res.PeerRatio, "%s: a ratio to the peer was computed", res.Scenario)
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

// newEnv is a quick Env on an in-process server, with Dial.
func newEnv(t *testing.T, concurrency int) *bench.Env {
	srv := natstest.New(t)
	return &bench.Env{
		JS: srv.JetStream(), Storage: jetstream.MemoryStorage, Concurrency: concurrency, Prefix: "t", Quick: true,
		Dial: func() (*nats.Conn, error) { return nats.Connect("", nats.InProcessServer(srv.Server)) },
	}
}

// dispatch, record and replay have a Watermill peer side, measured in the
// same rounds, and amends' ratio to it.
func TestPeerSides(t *testing.T) {
	env := newEnv(t, 2)
	for _, res := range runScenarios(t, env, 600*time.Millisecond, "dispatch", "record", "replay") {
		require.NotNil(t, res.Peer, res.Scenario)
		assert.Equal(t, "peer", res.Peer.Side)
		assert.Positive(t, res.Peer.Ops, "%s: the peer side ran", res.Scenario)
		assert.Positive(t, res.Peer.P50, "%s: the peer's latencies were recorded", res.Scenario)
		assert.Positive(t, res.PeerRatio, "%s: a ratio to the peer was computed", res.Scenario)
		assert.Equal(t, 2, res.Concurrency)
	}
	names := env.JS.StreamNames(t.Context())
	for n := range names.Name() {
		t.Errorf("stream %s was left behind", n)
	}
	require.NoError(t, names.Err())
}

// A peer side needs its own connections; without Dial it says so.
func TestPeerSideWithoutDial(t *testing.T) {
	env := newEnv(t, 1)
	env.Dial = nil
	scenarios, err := bench.Select([]string{"dispatch"})
	require.NoError(t, err)
	_, err = (&bench.Runner{Env: env, Duration: 100 * time.Millisecond}).Run(t.Context(), scenarios)
	assert.ErrorContains(t, err, "scenario dispatch at concurrency 1: prepare: the peer side needs its own connections")
}

// A sweep runs every scenario at each worker count, with fresh fixtures,
// and restores Env.Concurrency.
func TestSweep(t *testing.T) {
	env := newEnv(t, 3)
	scenarios, err := bench.Select([]string{"append", "due"})
	require.NoError(t, err)
	results, err := (&bench.Runner{Env: env, Duration: 100 * time.Millisecond, Sweep: []int{1, 2}}).Run(t.Context(), scenarios)
	require.NoError(t, err)
	var got []string
	for _, r := range results {
		got = append(got, fmt.Sprintf("%s@%d", r.Scenario, r.Concurrency))
		assert.Positive(t, r.Amends.Ops)
	}
	assert.Equal(t, []string{"append@1", "append@2", "due@1", "due@2"}, got)
	assert.Equal(t, 3, env.Concurrency)
}

// Env.Records sets the large index of the query scenarios.
func TestQueryScenariosAtAConfiguredSize(t *testing.T) {
	env := newEnv(t, 1)
	env.Records = 20_000
	for _, res := range runScenarios(t, env, 200*time.Millisecond, "summary", "count") {
		assert.Equal(t, "10k records", res.Raw.Side)
		assert.Equal(t, "20k records", res.Amends.Side, res.Scenario)
		assert.Positive(t, res.Ratio, res.Scenario)
	}
}
