package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/notify"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/retention"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/scheduler"
	"github.com/amends-dev/amends/server"
)

// A key family: where a value is written and a valid value to start the
// mutations from.
type keyFamily struct {
	bucket, key string
	valid       string
}

// mutate returns a random value made from valid: garbage, a cut, an
// empty object, or valid JSON with one field deleted or set to an
// extreme.
func mutate(rnd *rand.Rand, valid string) string {
	switch rnd.IntN(6) {
	case 0:
		b := make([]byte, 1+rnd.IntN(64))
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		return string(b)
	case 1:
		if len(valid) > 1 {
			return valid[:rnd.IntN(len(valid)-1)+1]
		}
		return ""
	case 2:
		return "{}"
	}
	var doc any
	if json.Unmarshal([]byte(valid), &doc) != nil {
		return strconv.Itoa(rnd.IntN(3)-1) + "abc"[:rnd.IntN(4)]
	}
	extremes := []any{-1, math.MinInt64, math.MaxInt64, 9e18, 1e300, "abc", "", strings.Repeat("x", 70_000), "r-\u202e", nil, []any{}, map[string]any{}, true}
	doc = mutateJSON(rnd, doc, extremes, rnd.IntN(3) == 0)
	b, _ := json.Marshal(doc)
	return string(b)
}

// mutateJSON replaces (or, with drop, deletes) one leaf of doc, chosen at
// random.
func mutateJSON(rnd *rand.Rand, doc any, extremes []any, drop bool) any {
	switch v := doc.(type) {
	case map[string]any:
		if len(v) == 0 {
			return extremes[rnd.IntN(len(extremes))]
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		k := keys[rnd.IntN(len(keys))]
		if drop && rnd.IntN(2) == 0 {
			delete(v, k)
			return v
		}
		v[k] = mutateJSON(rnd, v[k], extremes, drop)
		return v
	case []any:
		if len(v) == 0 {
			return extremes[rnd.IntN(len(extremes))]
		}
		i := rnd.IntN(len(v))
		v[i] = mutateJSON(rnd, v[i], extremes, drop)
		return v
	}
	return extremes[rnd.IntN(len(extremes))]
}

// Random values under every key family of every bucket amends reads, and
// the index snapshot object, written into a running serve and service
// (the acceptance of "derived state never outranks the event store"):
// nothing panics and both stay ready; no bad value is rewritten without
// end (the buckets stop growing); no live record is removed; the good
// aggregates' events (their progress among the values) are each given to
// their Ordered function exactly once, none twice; and the quarantine
// lists no value twice. The same after a restart, which reads the
// snapshot.
func TestRandomValuesInEveryBucketNeverLoopStallOrDelete(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve and a service for several seconds")
	}
	for _, seed := range []uint64{20261203, 7} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomValuesRun(t, seed) })
	}
}

func randomValuesRun(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e := &hostileEnv{t: t, dir: t.TempDir(), hook: newHookReceiver(t)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; serve's log:\n%s", seed, e.cli.stderr.String())
		}
	})
	e.startServe("--index-audit-rate", "1000", "--index-snapshot-every", "1s")
	e.startProcessor()
	ctx := t.Context()

	// Live state: a failure with a held event, a rule, good aggregates.
	st, err := rules.OpenStore(ctx, e.js)
	require.NoError(t, err)
	rule, err := st.Add(ctx, api.Rule{Match: api.RuleMatch{FunctionContext: "shop", Processor: "Projector", Function: "onStep", ErrorCode: "Other"},
		Action: rules.MarkUnrecoverable, Reason: "a valid rule", Actor: "ops"})
	require.NoError(t, err)
	head, holdKey, holds := e.heldFailure("o-f")
	good := []string{"o-g1", "o-g2", "o-g3"}
	for _, id := range good {
		e.emit(id, 1)
		e.emit(id, 2)
	}
	require.Eventually(t, func() bool {
		for _, id := range good {
			if e.called(id, 2) != 1 {
				return false
			}
		}
		return true
	}, waitLimit, 10*time.Millisecond, "the good aggregates are handled")
	headView, err := projection.GetView(ctx, mustViews(t, e.js), head)
	require.NoError(t, err)
	viewJSON, _ := json.Marshal(headView)
	hold, err := holds.Get(ctx, holdKey)
	require.NoError(t, err)
	holdJSON, _ := json.Marshal(hold)
	ruleJSON, _ := json.Marshal(rule)
	other := circuit.Function{Context: "shop", Processor: "Mailer", Name: "onStep"}
	forced, _ := circuit.Evolve(circuit.New(other), time.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	circuitJSON, _ := json.Marshal(forced)

	families := []keyFamily{
		{projection.DefaultBucket, head, string(viewJSON)},
		{projection.DefaultBucket, uuid.NewString(), string(viewJSON)},
		{processor.HoldBucket, holdKey, string(holdJSON)},
		{processor.HoldBucket, processor.HoldKey("shop", "Projector", "onStep", "order", "o-x"), string(holdJSON)},
		{rules.DefaultBucket, rule.ID, string(ruleJSON)},
		{rules.DefaultBucket, "r-0000000000aa", strings.Replace(string(ruleJSON), rule.ID, "r-0000000000aa", 1)},
		{circuit.DefaultBucket, other.String(), string(circuitJSON)},
		{circuit.DefaultDrainBucket, other.String(), `{"function":{"context":"shop","processor":"Mailer","name":"onStep"},"phase":"waiting"}`},
		{scheduler.DefaultParkReleaseBucket, b64("shop") + "." + b64("Projector"), `{"context":"shop","processor":"Projector","build":{"version":"v1.0.0"},"phase":"steps","step":1,"startedAt":1}`},
		{retention.DefaultBucket, "sweep", `{"last":1}`},
		{notify.DefaultDedupBucket, kvstore.Hash("d_", "x"), `{"event":"e","at":1}`},
		{processor.DefaultBuildBucket, "b-" + b64("v9"), `{}`},
		{server.DefaultBatchBucket, kvstore.Hash("b_", "req"), `{}`},
	}
	for _, id := range good {
		families = append(families, keyFamily{processor.ProgressBucket, processor.HoldKey("shop", "Projector", "onStep", "order", id), "2"})
	}
	// The progress values the good aggregates get: anything, including a
	// valid version behind (0 to 2, 2 being the true one), the version to
	// come (3) or one ahead of the aggregate (4 and up: it ends at 3).
	progress := func() string {
		v := rnd.IntN(9)
		switch rnd.IntN(4) {
		case 0:
			return strconv.Itoa(v)
		case 1:
			return strconv.Itoa(v) + "h"
		}
		return mutate(rnd, "2")
	}
	written := map[string]int{} // bucket → values written
	for range 3 {
		for _, f := range families {
			v := mutate(rnd, f.valid)
			if f.bucket == processor.ProgressBucket {
				v = progress()
			}
			if len(v) > 60_000 {
				v = v[:60_000]
			}
			// The server may refuse a value over the bucket's size: that is
			// a bound too.
			_, _ = e.js.Publish(ctx, "$KV."+f.bucket+"."+f.key, []byte(v))
			written[f.bucket]++
		}
	}
	// The snapshot object, garbage too (read at the restart).
	obs, err := e.js.ObjectStore(ctx, projection.DefaultSnapshotBucket)
	if err == nil {
		_, err = obs.PutBytes(ctx, projection.DefaultBucket, []byte(mutate(rnd, "amends-index")))
		require.NoError(t, err)
	}
	// The good aggregates go on after the values are in.
	for _, id := range good {
		e.emit(id, 3)
	}

	check := func(when string) {
		t.Helper()
		e.stillRunning()
		e.waitReady()
		// Every event of a good aggregate given once: the progress, whatever
		// it was, never skips nor repeats a version.
		require.Eventually(t, func() bool {
			for _, id := range good {
				if e.called(id, 3) != 1 {
					return false
				}
			}
			return true
		}, waitLimit, 20*time.Millisecond, "%s: version 3 of each good aggregate handled: %v", when, func() map[string]int64 {
			out := map[string]int64{}
			for _, id := range good {
				out[id] = e.called(id, 3)
			}
			return out
		}())
		for _, id := range good {
			for v := uint64(1); v <= 3; v++ {
				assert.Equal(t, int64(1), e.called(id, v), "%s: %s@%d given once", when, id, v)
			}
		}
		// Every message acked: handled, or held where an operator sees why
		// (never redelivered for ever).
		require.Eventually(t, func() bool {
			s, err := e.js.Stream(ctx, e.store.StreamName("shop"))
			require.NoError(t, err)
			info, err := s.Info(ctx)
			require.NoError(t, err)
			c, err := e.js.Consumer(ctx, e.store.StreamName("shop"), processor.DurableName("shop", "Projector"))
			if err != nil {
				return false
			}
			ci, err := c.Info(ctx)
			return err == nil && ci.AckFloor.Stream >= info.State.LastSeq && ci.NumAckPending == 0
		}, waitLimit, 20*time.Millisecond, "%s: every message of the service is acked", when)
		holds, err := processor.OpenHolds(ctx, e.js, 1) // this serve's connection
		require.NoError(t, err)
		list, _, err := holds.List(ctx, processor.HoldFilter{}, 100)
		require.NoError(t, err)
		for _, h := range list {
			if slices.Contains(good, h.AggregateID) {
				require.NotNil(t, h.Recovered, "%s: a good aggregate is held only with the reason shown: %+v", when, h)
				assert.NotEmpty(t, h.Recovered.Reason)
			}
		}
		// No live record removed.
		_, ok := e.record(head)
		assert.True(t, ok, "%s: the failure record is still there", when)
		// No loop: the buckets stop growing.
		grown := func() map[string]uint64 {
			out := map[string]uint64{}
			for b := range written {
				s, err := e.js.Stream(ctx, "KV_"+b)
				if err != nil {
					continue
				}
				info, err := s.Info(ctx)
				require.NoError(t, err)
				out[b] = info.State.LastSeq
			}
			return out
		}
		var prev map[string]uint64
		var prevAt time.Time
		require.Eventually(t, func() bool {
			now, at := grown(), time.Now()
			still := prev != nil && at.Sub(prevAt) >= time.Second
			for b, n := range now {
				if prev == nil || n-prev[b] > 3 {
					still = false
				}
			}
			if !still && (prev == nil || at.Sub(prevAt) >= time.Second) {
				prev, prevAt = now, at // a new window
			}
			return still
		}, waitLimit, 250*time.Millisecond, "%s: no bucket is rewritten without end", when)
		// The quarantine lists each value once.
		c := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
		require.Equal(t, exitOK, c.run(t, "quarantine", "list", "--all", "-o", "json"), c.stderr.String())
		var page listJSON[api.QuarantineEntry]
		require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &page))
		seen := map[string]int{}
		for _, x := range page.Items {
			if x.Kind == api.QuarantineKindKV {
				seen[x.Bucket+" "+x.Key+" "+strconv.FormatUint(x.Seq, 10)]++
			}
		}
		for k, n := range seen {
			assert.Equal(t, 1, n, "%s: %s quarantined once", when, k)
		}
		assert.NotEmpty(t, seen, "%s: the bad values are quarantined", when)
	}
	check("running")
	e.stopP()
	require.Equal(t, exitOK, e.serve.stop(t), e.cli.stderr.String())
	assert.NotContains(t, e.cli.stderr.String(), "panic")
	e.startServe("--index-audit-rate", "1000", "--index-snapshot-every", "1s")
	e.startProcessor()
	check("after a restart")
}
