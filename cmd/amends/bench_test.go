package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
)

func TestBenchQuickPrintsARatioPerScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario for a second")
	}
	var c cli
	code := c.run(t, "bench", "--quick", "--storage", "memory", "-o", "json", "append", "load")
	require.Equal(t, exitOK, code, c.stderr.String())
	var results []bench.Result
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &results), c.stdout.String())
	require.Len(t, results, 2)
	for _, r := range results {
		assert.Positive(t, r.Ratio, "%s has a ratio", r.Scenario)
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for want, args := range map[string][]string{
		`unknown scenario "nope"`:                                                   {"bench", "nope"},
		"--output must be table or json":                                            {"bench", "-o", "yaml"},
		"--concurrency must be a worker count between 1 and 64":                     {"bench", "--concurrency", "0"},
		`or a comma-separated list of up to 8 distinct ones (1,2,4,8), got "1,2,2"`: {"bench", "--concurrency", "1,2,2"},
		`got "1,2,3,4,5,6,7,8,9"`:                                                   {"bench", "--concurrency", "1,2,3,4,5,6,7,8,9"},
		`got "65"`:                                                                  {"bench", "--concurrency", "65"},
		`got "two"`:                                                                 {"bench", "--concurrency", "two"},
		"--records must be between 10000 and 10000000, got 5":                       {"bench", "--records", "5"},
		`--plot must name an .svg or .png file, got "sweep.pdf"`:                    {"bench", "--plot", "sweep.pdf"},
		"--plot must be in a directory that exists":                                 {"bench", "--plot", "/nonexistent/dir/sweep.svg"},
		"--storage must be file or memory":                                          {"bench", "--storage", "tape"},
		"--cluster must be 3 or 5 nodes, got 4":                                     {"bench", "--cluster", "4"},
		"cannot be combined with --nats-url":                                        {"bench", "--cluster", "3", "--nats-url", "nats://127.0.0.1:1"},
		"--replicas must be between 1 and 5, got 7":                                 {"bench", "--replicas", "7"},
		"--replicas 3 needs at least as many servers":                               {"bench", "--replicas", "3"},
		"--replicas 5 needs at least as many servers: add --cluster 5":              {"bench", "--cluster", "3", "--replicas", "5"},
	} {
		var c cli
		assert.Equal(t, exitUsage, c.run(t, args...), "%v", args)
		assert.Contains(t, c.stderr.String(), want)
	}
}

// A sweep runs each scenario at every worker count; dispatch's peer side
// comes out in JSON shaped like the raw and amends sides, and the plot is
// written.
func TestBenchSweepWithPeerAndPlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for a second at two worker counts")
	}
	plotFile := filepath.Join(t.TempDir(), "sweep.svg")
	var c cli
	code := c.run(t, "bench", "--quick", "--storage", "memory", "-o", "json", "--concurrency", "1,2", "--plot", plotFile, "dispatch")
	require.Equal(t, exitOK, code, c.stderr.String())
	var results []bench.Result
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &results), c.stdout.String())
	require.Len(t, results, 2)
	for i, r := range results {
		assert.Equal(t, i+1, r.Concurrency)
		require.NotNil(t, r.Peer, "dispatch has a peer side")
		assert.Equal(t, "peer", r.Peer.Side)
		assert.Positive(t, r.Peer.PerSec)
		assert.Positive(t, r.PeerRatio)
	}
	var raw []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &raw))
	for _, doc := range raw {
		r := map[string]map[string]any{}
		for _, side := range []string{"raw", "peer", "amends"} {
			var m map[string]any
			require.NoError(t, json.Unmarshal(doc[side], &m), side)
			r[side] = m
		}
		assert.ElementsMatch(t, keys(r["raw"]), keys(r["peer"]), "peer is shaped like raw")
		assert.ElementsMatch(t, keys(r["amends"]), keys(r["peer"]), "peer is shaped like amends")
	}
	svg, err := os.ReadFile(plotFile)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "dispatch")
}

// The floor side (replay's same bytes) gets a line of its own in the plot.
func TestBenchPlotDrawsTheFloor(t *testing.T) {
	side := func(name string, perSec float64) *bench.Measurement {
		return &bench.Measurement{Side: name, PerSec: perSec}
	}
	results := []bench.Result{{Scenario: "replay", Concurrency: 1, Raw: side("raw", 3000), Floor: side("raw, same bytes", 2400),
		Peer: side("peer", 4000), Amends: *side("amends", 2200)}}
	plots, err := scenarioPlots(results)
	require.NoError(t, err)
	require.Len(t, plots, 1)
	file := filepath.Join(t.TempDir(), "replay.svg")
	require.NoError(t, writePlot(file, results))
	svg, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, name := range []string{"raw", "raw, same bytes", "peer", "amends"} {
		assert.Contains(t, string(svg), ">"+name+"<", "the legend names %s", name)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestBenchPlotPNG(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sweep.PNG")
	var results []bench.Result
	for _, c := range []int{1, 2, 4} {
		results = append(results, bench.Result{Scenario: "record", Concurrency: c,
			Raw:    &bench.Measurement{Side: "raw", PerSec: float64(1000 * c), P50: time.Millisecond},
			Peer:   &bench.Measurement{Side: "peer", PerSec: float64(500 * c)},
			Amends: bench.Measurement{Side: "amends", PerSec: float64(800 * c)}})
	}
	require.NoError(t, checkPlotPath(file))
	require.NoError(t, writePlot(file, results))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")), "a PNG file")
}

// The table prints the peer side between raw and amends, and amends/peer
// next to amends/raw.
func TestBenchTablePrintsThePeerRatio(t *testing.T) {
	var out bytes.Buffer
	printResults(&out, []bench.Result{{Scenario: "record", Concurrency: 4, Ratio: 0.5, PeerRatio: 1.25,
		Raw:    &bench.Measurement{Side: "raw", PerSec: 2000},
		Peer:   &bench.Measurement{Side: "peer", PerSec: 800},
		Amends: bench.Measurement{Side: "amends", PerSec: 1000}}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, out.String())
	assert.Regexp(t, `SCENARIO\s+WORKERS\s+SIDE\s+PER SECOND\s+P50\s+P99\s+RATIO\s+VS PEER`, lines[0])
	assert.Regexp(t, `record\s+4\s+peer\s+800\s`, lines[2])
	assert.Regexp(t, `record\s+4\s+amends\s+1000\s.*0\.50x\s+1\.25x`, lines[3])
}

func TestBenchRatesBelowAHundredKeepTheirDigits(t *testing.T) {
	assert.Equal(t, "1.32", rate(1.3217))
	assert.Equal(t, "45.3", rate(45.31))
	assert.Equal(t, "2500", rate(2500.4))
}

// The storm's dashboard has no tokens: it is served on loopback only.
func TestBenchStormDashboardIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"10.0.0.1:8088", "0.0.0.0:8088", ":8088", "example.com:80", "8088"} {
		var c cli
		assert.Equal(t, exitUsage, c.run(t, "bench", "storm", "--dashboard", addr), addr)
		assert.Contains(t, c.stderr.String(), "--dashboard", addr)
	}
	l, err := listenLoopback("--dashboard", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
