package scheduler_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/rollout"
	"github.com/amends-dev/amends/scheduler"
)

func releaseKey(context, proc string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(context)) + "." + enc.EncodeToString([]byte(proc))
}

// A release stored before the rollout engine (the same JSON) reads as it
// was; each field of its own, and of its progress, is checked by name.
func TestDecodeParkRelease(t *testing.T) {
	now := t0.Add(time.Hour)
	ms := t0.UnixMilli()
	key := releaseKey("order", "OrderProjector")
	old := `{"context":"order","processor":"OrderProjector","build":{"version":"v2"},"previousBuild":{"version":"v1"},"phase":"halted",` +
		`"step":2,"startedAt":` + jsonInt(ms) + `,"released":3,"succeeded":1,"failed":2,"halt":"the step failed","updatedAt":` + jsonInt(ms) + `}`
	got, err := scheduler.DecodeParkRelease(key, []byte(old), now)
	require.NoError(t, err)
	want := scheduler.ParkRelease{Context: "order", Processor: "OrderProjector", Build: processor.Build{Version: "v2"}, PreviousBuild: processor.Build{Version: "v1"},
		Progress: rollout.Progress{Phase: scheduler.PhaseHalted, Step: 2, StartedAt: ms, Released: 3, Succeeded: 1, Failed: 2, Halt: "the step failed", UpdatedAt: ms}}
	assert.Equal(t, want, got)

	running := want
	running.Progress = rollout.Progress{Phase: scheduler.PhaseSteps, Step: 1, StartedAt: ms, Batch: []rollout.Record{{ID: "r-1", Attempt: 2}}, UpdatedAt: ms}
	for field, change := range map[string]func(*scheduler.ParkRelease){
		"processor":   func(r *scheduler.ParkRelease) { r.Processor = "Other" },
		"build":       func(r *scheduler.ParkRelease) { r.Build = processor.Build{} },
		"startedAt":   func(r *scheduler.ParkRelease) { r.StartedAt = 0 },
		"step":        func(r *scheduler.ParkRelease) { r.Step = scheduler.MaxParkReleaseSteps + 1 },
		"rate":        func(r *scheduler.ParkRelease) { r.Rate = 5 },
		"nextAt":      func(r *scheduler.ParkRelease) { r.NextAt = now.Add(time.Hour).UnixMilli() },
		"halt":        func(r *scheduler.ParkRelease) { r.Halt = "not halted" },
		"batch[0].id": func(r *scheduler.ParkRelease) { r.Batch = []rollout.Record{{ID: "", Attempt: 1}} },
	} {
		r := running
		change(&r)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		_, err = scheduler.DecodeParkRelease(key, b, now)
		require.Error(t, err, field)
		assert.Contains(t, err.Error(), field)
	}
	b, err := json.Marshal(running)
	require.NoError(t, err)
	_, err = scheduler.DecodeParkRelease(key, b, now)
	require.NoError(t, err)
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }
