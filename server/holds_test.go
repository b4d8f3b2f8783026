package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/server"
)

// orderingEnv is the server env with the ordering routes and a processor
// of context shop whose Ordered function Projector.onStep fails on
// version 1 of every order; it returns the store to emit events with.
func orderingEnv(t *testing.T) (*env, *jsstore.Store) {
	t.Helper()
	e := newEnv(t)
	store, err := jsstore.New(e.js)
	require.NoError(t, err)
	require.NoError(t, store.Provision(t.Context(), "shop"))
	holds, err := processor.OpenHolds(t.Context(), e.js, 1)
	require.NoError(t, err)
	replays, err := processor.OpenReplays(t.Context(), e.js, 1)
	require.NoError(t, err)
	e = e.with(t, func(c *server.Config) {
		c.Ordering = &server.Ordering{Holds: holds, Replays: replays, Records: e.svc, JS: e.js, Store: store}
	})
	rec, err := recorder.New(e.svc)
	require.NoError(t, err)
	p, err := processor.New(e.js, store, "shop", processor.WithRecorder(rec), processor.WithRecords(e.svc), processor.WithRangeReplays())
	require.NoError(t, err)
	require.NoError(t, p.Register(processor.Function{Processor: "Projector", Name: "onStep", AggregateTypes: []string{"order"}},
		func(_ context.Context, d *processor.Delivery) error {
			if d.Stream.Version == 1 {
				return errBoom
			}
			return nil
		}, processor.Ordered()))
	runCtx, stopRun := context.WithCancel(t.Context())
	require.NoError(t, p.Start(runCtx))
	t.Cleanup(func() { stopRun(); _ = p.Wait() })
	return e, store
}

var errBoom = errors.New("boom")

func emitOrder(t *testing.T, store *jsstore.Store, id string, v uint64) {
	t.Helper()
	st := eventstore.Stream{ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: id}, CreateTime: t0,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: json.RawMessage(`{}`)}}}
	_, err := store.Append(context.Background(), st, v-1)
	require.NoError(t, err)
}

// Given a held order, when a viewer lists and reads holds and an operator
// dry-runs and runs a release, then the list shows the counts, the viewer
// may not release, the dry run changes nothing and the release empties the
// hold, with the head record's history naming the operator.
func TestHoldRoutes(t *testing.T) {
	e, store := orderingEnv(t)
	for v := uint64(1); v <= 3; v++ {
		emitOrder(t, store, "o-1", v)
	}
	key := api.HoldKey("shop", "Projector", "onStep", "order", "o-1")
	var page api.HoldPage
	require.Eventually(t, func() bool {
		r := e.do(t, "GET", "/api/v1/holds?context=shop", viewerKey, nil)
		if r.status != http.StatusOK {
			return false
		}
		r.json(t, &page)
		return len(page.Holds) == 1 && page.Holds[0].Held == 2
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, api.HoldSummary{Key: key, Context: "shop", Processor: "Projector", Function: "onStep", AggregateType: "order", AggregateID: "o-1",
		HeadRecord: page.Holds[0].HeadRecord, HeadVersion: 1, Held: 2, OldestVersion: 2, NewestVersion: 3, Since: page.Holds[0].Since}, page.Holds[0])

	r := e.do(t, "GET", "/api/v1/holds/"+key, viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var h api.Hold
	r.json(t, &h)
	assert.Len(t, h.Held, 2)

	assert.Equal(t, http.StatusForbidden, e.do(t, "POST", "/api/v1/holds/"+key+"/release", viewerKey, map[string]any{"reason": "x"}).status)
	r = e.do(t, "POST", "/api/v1/holds/"+key+"/release", operatorKey, map[string]any{})
	assert.Equal(t, http.StatusBadRequest, r.status, "a release needs a reason")
	assert.Equal(t, "reason", r.apiError(t).Details["field"])
	r = e.do(t, "POST", "/api/v1/holds/"+key+"/release", operatorKey, map[string]any{"reason": "fixed by hand", "dryRun": true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var plan api.ReleasePlan
	r.json(t, &plan)
	assert.True(t, plan.DryRun)
	assert.Equal(t, []string{aggregate.NameForcePrepareCompensation, aggregate.NameApplyExecutionSuccess}, plan.Commands)
	st, _, err := e.svc.Get(context.Background(), h.Head.Record)
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusFailed, st.Status, "a dry run changes nothing")

	r = e.do(t, "POST", "/api/v1/holds/"+key+"/release", operatorKey, map[string]any{"reason": "fixed by hand"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Eventually(t, func() bool {
		return e.do(t, "GET", "/api/v1/holds/"+key, viewerKey, nil).status == http.StatusNotFound
	}, 30*time.Second, 10*time.Millisecond, "the hold is released")
	hist, err := store.Load(context.Background(), aggregate.RecordAggregate(h.Head.Record), 1)
	require.NoError(t, err)
	assert.Equal(t, "bob", hist[len(hist)-1].Headers[aggregate.HeaderActor])
	assert.Equal(t, "fixed by hand", hist[len(hist)-1].Headers[aggregate.HeaderReason])

	r = e.do(t, "POST", "/api/v1/holds/"+key+"/skip", operatorKey, map[string]any{"reason": "r", "eventId": "e"})
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, http.StatusBadRequest, e.do(t, "GET", "/api/v1/holds/bad%20key", viewerKey, nil).status)
	assert.Equal(t, http.StatusBadRequest, e.do(t, "GET", "/api/v1/holds?processor=P", viewerKey, nil).status, "processor needs context")
}

// Given an order's committed versions, when an operator dry-runs and
// starts a range replay and sends it again, then the dry run lists the
// events, the start answers 201, the same id answers 200 with the stored
// replay, another selection under it 409, and the replay ends DONE.
func TestReplayRoutes(t *testing.T) {
	e, store := orderingEnv(t)
	emitOrder(t, store, "o-9", 1)
	emitOrder(t, store, "o-9", 2)
	body := map[string]any{"id": "r-1", "context": "shop", "processor": "Projector", "function": "onStep",
		"aggregateType": "order", "aggregateId": "o-9", "fromVersion": 2, "toVersion": 2, "reason": "re-project"}
	dry := map[string]any{"dryRun": true}
	for k, v := range body {
		dry[k] = v
	}
	r := e.do(t, "POST", "/api/v1/replays", operatorKey, dry)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var started api.ReplayStarted
	r.json(t, &started)
	require.NotNil(t, started.Plan)
	assert.Equal(t, 1, started.Plan.Count)
	assert.Nil(t, started.Replay)
	assert.Equal(t, http.StatusNotFound, e.do(t, "GET", "/api/v1/replays/r-1", viewerKey, nil).status, "a dry run stores nothing")

	r = e.do(t, "POST", "/api/v1/replays", operatorKey, body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	r = e.do(t, "POST", "/api/v1/replays", operatorKey, body)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &started)
	assert.False(t, started.Created)
	assert.Equal(t, "bob", started.Replay.Actor)
	body["toVersion"] = 1
	body["fromVersion"] = 1
	assert.Equal(t, http.StatusConflict, e.do(t, "POST", "/api/v1/replays", operatorKey, body).status)
	body["id"], body["fromVersion"] = "r-2", 3
	r = e.do(t, "POST", "/api/v1/replays", operatorKey, body)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, r.apiError(t).Message, "must not be before the first")
	require.Eventually(t, func() bool {
		r := e.do(t, "GET", "/api/v1/replays/r-1", viewerKey, nil)
		var rr api.Replay
		return r.status == http.StatusOK && json.Unmarshal(r.body, &rr) == nil && rr.Status == api.ReplayDone && rr.Replayed == 1
	}, 30*time.Second, 10*time.Millisecond)
}
