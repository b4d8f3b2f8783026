package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
)

func TestBenchPartitionsUsageErrors(t *testing.T) {
	for want, args := range map[string][]string{
		"--records must be between 1000 and 10000000, got 99":        {"--records", "99"},
		"--processors values must be between 2 and 1000, got 1":      {"--processors", "20,1"},
		`--processors: "x" is not a whole number`:                    {"--processors", "x"},
		"--instances values must be between 1 and 8, got 9":          {"--instances", "1,9"},
		"--kills must be between 0 and 20, got 21":                   {"--kills", "21"},
		"--lease-ttl must be between 1s and 1m, got 500ms":           {"--lease-ttl", "500ms"},
		"--output must be table or json":                             {"-o", "yaml"},
		"--kill-loop must be between 0 and 100 (0: none), got 101":   {"--kill-loop", "101"},
		"--kill-loop-records must be between 100 and 1000000, got 5": {"--kill-loop-records", "5"},
	} {
		var c cli
		code := c.run(t, append([]string{"bench", "partitions"}, args...)...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, c.stderr.String(), want, "%v", args)
	}
}

// The bench runs on the built binary: two instances split 1000 records,
// each within its share's bounds, and one killed is served again.
func TestBenchPartitionsRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs serve instances")
	}
	bin := buildBinary(t)
	cmd := exec.CommandContext(t.Context(), bin, "bench", "partitions", "--records", "1000", "--processors", "20", "--instances", "2", "--kills", "1", "--lease-ttl", "2s",
		"--kill-loop", "1", "--kill-loop-records", "200", "-o", "json")
	cmd.Env = cleanEnv()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("bench partitions failed: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)
	var res bench.PartitionsResult
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	require.Len(t, res.Instances, 2)
	held := 0
	for _, in := range res.Instances {
		held += in.Held
		assert.InDelta(t, 1, in.Share, 0.5, "instance %s holds about its share", in.Instance)
		assert.Positive(t, in.HeapLive)
		assert.Positive(t, in.Count)
	}
	require.Equal(t, 1000, held, "every record held once")
	require.Len(t, res.Kills, 1)
	assert.Positive(t, res.Kills[0].Reserved)
	assert.Equal(t, 2*time.Second, res.Kills[0].LeaseTTL)
	require.NotNil(t, res.KillLoop)
	require.Len(t, res.KillLoop.Rounds, 1)
	assert.Zero(t, res.KillLoop.Rounds[0].Short, "no answer short without saying so")
	assert.Positive(t, res.KillLoop.Rounds[0].Reserved)
	assert.Equal(t, 200, res.KillLoop.Prepared, "every record prepared")
	assert.Zero(t, res.KillLoop.Twice, "none twice")
	assert.Positive(t, res.KillLoop.Made, "records made during the loop")
}
