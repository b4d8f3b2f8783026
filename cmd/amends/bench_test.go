package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/bench"
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
		`unknown scenario "nope"`:                                      {"bench", "nope"},
		"--output must be table or json":                               {"bench", "-o", "yaml"},
		"--concurrency must be at least 1":                             {"bench", "--concurrency", "0"},
		"--storage must be file or memory":                             {"bench", "--storage", "tape"},
		"--cluster must be 3 or 5 nodes, got 4":                        {"bench", "--cluster", "4"},
		"cannot be combined with --nats-url":                           {"bench", "--cluster", "3", "--nats-url", "nats://127.0.0.1:1"},
		"--replicas must be between 1 and 5, got 7":                    {"bench", "--replicas", "7"},
		"--replicas 3 needs at least as many servers":                  {"bench", "--replicas", "3"},
		"--replicas 5 needs at least as many servers: add --cluster 5": {"bench", "--cluster", "3", "--replicas", "5"},
	} {
		var c cli
		assert.Equal(t, exitUsage, c.run(t, args...), "%v", args)
		assert.Contains(t, c.stderr.String(), want)
	}
}
