package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
)

var update = flag.Bool("update", false, "write the golden files of testdata/wire/holds (only for new shapes: a published golden is never edited)")

// The stored shapes of a hold (a KV value of amends_holds) and a range
// replay (of amends_replays): encode(value) == golden, decode(golden) ==
// value.
func TestHoldAndReplayWire(t *testing.T) {
	for name, v := range map[string]any{
		"hold.json": &api.Hold{Context: "shop", Processor: "Projector", Function: "onStep", AggregateType: "order", AggregateID: "o-1",
			Head:      api.HoldHead{Record: "0b6b4b0e-3c0b-5a55-9b1e-3a4f3f0d2b11", EventID: "evt-1", Version: 5, Seq: 41, Since: 1735000000000},
			Held:      []api.HeldEvent{{EventID: "evt-2", Version: 6, Seq: 44, HeldAt: 1735000001000}, {EventID: "evt-3", Version: 7, Seq: 47, Index: 1, HeldAt: 1735000002000}},
			Releasing: true, Released: &api.HoldAudit{Actor: "alice", Reason: "fixed by hand", At: 1735000003000},
			Skipped: []api.HeldSkip{{HeldEvent: api.HeldEvent{EventID: "evt-9", Version: 8, Seq: 50, HeldAt: 1735000002500}, HoldAudit: api.HoldAudit{Actor: "bob", Reason: "duplicate", At: 1735000002600}}},
			Claim:   &api.HoldClaim{Owner: "5d0c7f3e-1f7e-4a57-9c3c-4d3b2f1a0e9d", Until: 1735000033000}},
		"replay.json": &api.Replay{ID: "r-1", Context: "shop", Processor: "Projector", Function: "onStep", AggregateType: "order", AggregateID: "o-1",
			FromVersion: 5, ToVersion: 9, EventNames: []string{"order_paid"}, FromTime: 1734000000000, ToTime: 1735000000000, Rate: 100,
			Actor: "alice", Reason: "projection bug 123", Created: 1735000000000, Status: api.ReplayRunning, Next: 7, Replayed: 2, Failed: 1,
			Updated: 1735000004000, Claim: &api.HoldClaim{Owner: "5d0c7f3e-1f7e-4a57-9c3c-4d3b2f1a0e9d", Until: 1735000034000}},
	} {
		path := filepath.Join("..", "testdata", "wire", "holds", name)
		data, err := json.Marshal(v)
		require.NoError(t, err)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, data, "", "  "))
		pretty.WriteByte('\n')
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, pretty.Bytes(), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./api -run TestHoldAndReplayWire -update once for a new shape")
		assert.Equal(t, string(want), pretty.String(), "%s: encode", name)
		back := newOf(v)
		require.NoError(t, json.Unmarshal(want, back))
		assert.Equal(t, v, back, "%s: decode", name)
	}
}

func newOf(v any) any {
	switch v.(type) {
	case *api.Hold:
		return &api.Hold{}
	default:
		return &api.Replay{}
	}
}
