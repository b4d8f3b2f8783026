package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/cmd/amends/internal/bench"
)

func TestBenchFootprintUsageErrors(t *testing.T) {
	for want, args := range map[string][]string{
		"--attempts values must be between 1 and 100, got 0":        {"--attempts", "1,0"},
		`--attempts: "x" is not a whole number`:                     {"--attempts", "x"},
		"--attempts takes at most 8 values, got 9":                  {"--attempts", "1,2,3,4,5,6,7,8,9"},
		"--per-shape must be between 10 and 100000, got 5":          {"--per-shape", "5"},
		"--startup values must be between 1000 and 10000000":        {"--startup", "20000000"},
		`--startup: "1e6" is not a whole number`:                    {"--startup", "1e6"},
		"--records must be between 1000 and 10000000, got 99":       {"--records", "99"},
		"--records must be between 1000 and 10000000, got 20000000": {"--records", "20000000"},
		"--output must be table or json":                            {"-o", "yaml"},
		"--storage must be file or memory":                          {"--storage", "tape"},
	} {
		var c cli
		code := c.run(t, append([]string{"bench", "footprint"}, args...)...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, c.stderr.String(), want, "%v", args)
	}
}

func TestBenchFootprintQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("makes records and a bucket of 20 000 views")
	}
	var c cli
	code := c.run(t, "bench", "footprint", "--quick", "--storage", "memory", "--attempts", "1,3", "--per-shape", "10", "--startup", "2000", "-o", "json")
	require.Equal(t, exitOK, code, c.stderr.String())
	var res bench.FootprintResult
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &res), c.stdout.String())
	whats := map[string]bool{}
	for _, d := range res.Disk {
		whats[d.What] = true
		assert.Positive(t, d.BytesPerRecord, "%+v", d)
	}
	assert.True(t, whats["compensation stream"] && whats["views bucket"], "both measured: %+v", res.Disk)
	for _, d := range res.Disk {
		if d.What == "compensation stream" {
			assert.Zero(t, d.AfterMsgsPerRecord, "the sweep removed every record's events: %+v", d)
			assert.Less(t, d.AfterBytesPerRecord, d.BytesPerRecord, "%+v", d)
		}
	}
	require.Len(t, res.Startup, 1)
	s := res.Startup[0]
	assert.Equal(t, 2000, s.Records)
	for name, d := range map[string]any{"raw watch": s.RawWatch, "full load": s.FullLoad, "snapshot read": s.SnapshotRead, "from snapshot": s.FromSnapshot} {
		assert.Positive(t, d, name)
	}
	assert.Positive(t, s.SnapshotBytes)
	assert.Positive(t, s.SnapshotLoad, "the snapshot's read and decode, as the index counts it")
	assert.Less(t, s.SnapshotLoad, s.FromSnapshot, "a part of the start from the snapshot")
	assert.Len(t, res.Queries, 8, "four queries at 10k and at 2k")
}

// --records adds the largest size to --startup, or to its default below
// it: the sizes a run measures, each once.
func TestBenchFootprintRecordsAddsToTheStartupSizes(t *testing.T) {
	for _, c := range []struct {
		f    footprintFlags
		want []int
	}{
		{footprintFlags{bench: benchFlags{records: 10_000_000}}, []int{100_000, 1_000_000, 10_000_000}},
		{footprintFlags{bench: benchFlags{records: 500_000}}, []int{100_000, 500_000}},
		{footprintFlags{bench: benchFlags{records: 1_000_000}}, []int{100_000, 1_000_000}},
		{footprintFlags{bench: benchFlags{records: 50_000, quick: true}}, []int{20_000, 50_000}},
		{footprintFlags{startup: "5000", bench: benchFlags{records: 1_000_000}}, []int{5000, 1_000_000}},
		{footprintFlags{startup: "5000,20000", bench: benchFlags{records: 5000}}, []int{5000, 20000}},
		{footprintFlags{startup: "5000"}, []int{5000}},
	} {
		c.f.bench.output, c.f.attempts = "table", "1,3,10"
		got, err := footprintConfig(&c.f)
		require.NoError(t, err, "%+v", c.f)
		assert.Equal(t, c.want, got.Startup, "%+v", c.f)
	}
}
