package scheduler_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/scheduler"
)

// Finding 1: a release written into the bucket with a step the policy
// does not have made launch index its steps at -1 (and settle at a huge
// index with a batch): serve panicked on every pass, after every restart.
// Such a release is halted instead, quarantined, and the held records stay
// held; the scheduler goes on.
func TestAStoredReleaseThatDoesNotValidateIsHalted(t *testing.T) {
	for _, c := range []struct{ name, body, field string }{
		{"negative step", `"phase":"steps","step":-1`, "step"},
		{"huge step with a batch", `"phase":"steps","step":999,"batch":[{"id":"r1","attempt":1}]`, ""},
		{"step beyond the bound", `"phase":"steps","step":1000000`, "step"},
		{"unknown phase", `"phase":"sideways"`, "phase"},
		{"not JSON", ``, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, js := natstest.New(t).Connect()
			e := newEnv(t, js, 1, steadyTTL)
			q, err := quarantine.New(js, quarantine.WithMemoryStorage())
			require.NoError(t, err)
			rel, err := scheduler.OpenParkReleases(t.Context(), js, "", 0, scheduler.WithParkReleasesQuarantine(q))
			require.NoError(t, err)
			live := processor.Build{Version: "v1.0.0"}
			builds := staticBuilds{{Context: "order", Processor: "OrderProjector", Instance: "a", Build: live, StartedAt: 1}}
			hold := byFunctionRule()
			key := base64.RawURLEncoding.EncodeToString([]byte("order")) + "." + base64.RawURLEncoding.EncodeToString([]byte("OrderProjector"))
			value := fmt.Sprintf(`{"context":"order","processor":"OrderProjector","build":{"version":"v1.0.0"},%s,"startedAt":1}`, c.body)
			if c.body == "" {
				value = `{"context":`
			}
			_, err = js.Publish(t.Context(), "$KV."+scheduler.DefaultParkReleaseBucket+"."+key, []byte(value))
			require.NoError(t, err)

			ticks := make(chan time.Time)
			s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithParkRules(scheduler.StaticRules{Rules: rules.NewSet([]api.Rule{hold})}),
				scheduler.WithParkRelease(builds, e.index, rel, scheduler.ParkReleasePolicy{}, nil))
			run(t, s)
			waitActive(t, s)
			tick(t, s, ticks)
			tick(t, s, ticks) // and a second pass, on the halted release

			r, ok, err := rel.Get(t.Context(), "order", "OrderProjector")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, scheduler.PhaseHalted, r.Phase, "halted: %s", r.Halt)
			assert.Equal(t, live, r.Build)
			assert.Empty(t, r.Batch)
			assert.Equal(t, uint64(1), s.Stats().ParkReleases.Halted, "halted once")
			assert.Zero(t, s.Stats().ParkReleases.Prepared, "nothing released")

			entries, err := q.All(t.Context(), quarantine.Query{Consumer: scheduler.DefaultParkReleaseBucket})
			require.NoError(t, err)
			if c.name == "huge step with a batch" {
				assert.Empty(t, entries, "a valid entry the policy cannot continue is halted, not quarantined")
				assert.Contains(t, r.Halt, "past the 4 steps of the policy")
				return
			}
			require.Len(t, entries, 1)
			assert.Equal(t, key, entries[0].Key)
			if c.field != "" {
				assert.Contains(t, entries[0].Error, ": "+c.field+": ")
			}
			assert.Contains(t, r.Halt, "the stored release does not validate")
		})
	}
}

func byFunctionRule() api.Rule {
	return api.Rule{ID: "r-000000000001", Match: api.RuleMatch{FunctionContext: fn.ContextName, Processor: fn.ProcessorName, Function: fn.Name, ErrorCode: "Timeout"},
		Action: rules.ParkUntilDeploy, Reason: "wait for the fix", CreatedAt: 1}
}

// Finding 3: views of records that do not exist (due, FAILED, earlier
// than the real ones) took the whole batch of every pass: real records
// were never prepared, only the rejected count moved. Each backs off and
// is handed to the projector, which deletes it; the real records are
// prepared by the next pass.
func TestViewsOfRecordsThatDoNotExistDoNotStarveThePasses(t *testing.T) {
	_, js := natstest.New(t).Connect()
	e := newEnv(t, js, 1, steadyTTL)
	q, err := quarantine.New(js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	reproj, err := projection.NewProjector(js, e.store, views, projection.WithQuarantine(q), projection.WithDurable("reprojector"))
	require.NoError(t, err)

	var real []string
	versions := map[string]uint64{}
	for i := range 3 {
		id, v := e.create(t, i, aggregate.Recoverable)
		real = append(real, id)
		versions[id] = v
	}
	e.indexed(t, versions)
	template, err := projection.GetView(t.Context(), views, real[0])
	require.NoError(t, err)
	const fakes = 120
	for range fakes {
		v := template
		v.State.ID = uuid.NewString()
		v.State.RetryState.NextRetryAt = template.State.RetryState.NextRetryAt - 1000
		b, err := json.Marshal(v)
		require.NoError(t, err)
		key, err := projection.ViewKey(v.State.Function.ProcessorName, v.State.ID)
		require.NoError(t, err)
		_, err = views.Put(t.Context(), key, b)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return e.index.Len() == 3+fakes }, 30*time.Second, 5*time.Millisecond)

	ticks := make(chan time.Time)
	e.clock.SetMillis(t0.UnixMilli() + 60_000)
	s := e.scheduler(t, e.svc, scheduler.WithTicks(ticks), scheduler.WithBatch(100), scheduler.WithReprojector(reproj))
	run(t, s)
	waitActive(t, s)
	tick(t, s, ticks)
	tick(t, s, ticks)
	for _, id := range real {
		assert.Len(t, e.prepares(t, id), 1, "real record %s prepared", id)
	}
	assert.Equal(t, uint64(fakes), s.Stats().Missing)
	require.Eventually(t, func() bool { return e.index.Len() == 3 }, 30*time.Second, 5*time.Millisecond, "the views of the records that do not exist are deleted")
	all, err := q.All(t.Context(), quarantine.Query{Consumer: projection.DefaultBucket})
	require.NoError(t, err)
	assert.Len(t, all, fakes)
}
