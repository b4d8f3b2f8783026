package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/server"
)

func circuitsEnv(t *testing.T) (*env, *circuit.Store) {
	t.Helper()
	base := newEnv(t)
	store, err := circuit.OpenStore(t.Context(), base.js, circuit.WithClock(base.clock))
	require.NoError(t, err)
	w := store.Watcher("", nil, nil)
	runInBackground(t, w.Run)
	<-w.Ready()
	drains, err := circuit.OpenDrains(t.Context(), base.js, "", 1)
	require.NoError(t, err)
	return base.with(t, func(c *server.Config) { c.Circuits = &server.Circuits{Watcher: w, Store: store, Drains: drains} }), store
}

func TestCircuitsAPI(t *testing.T) {
	e, store := circuitsEnv(t)
	const path = "/api/v1/circuits/order.Mailer.send"

	r := e.do(t, "GET", path, viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var c api.Circuit
	r.json(t, &c)
	assert.Equal(t, api.Circuit{Function: "order.Mailer.send", Context: "order", Processor: "Mailer", Name: "send", Phase: "CLOSED", Transitions: []api.CircuitTransition{}}, c,
		"a function that never opened is closed, not stored")

	r = e.do(t, "POST", path+"/open", viewerKey, api.CircuitAction{Reason: "x"})
	assert.Equal(t, http.StatusForbidden, r.status, "a viewer cannot open a circuit")
	r = e.do(t, "POST", path+"/open", operatorKey, api.CircuitAction{})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Equal(t, "reason", r.apiError(t).Details["field"])
	r = e.do(t, "POST", path+"/open", operatorKey, `{"reason":"x","force":true}`)
	assert.Equal(t, http.StatusBadRequest, r.status, "unknown fields are refused: %s", r.body)
	r = e.do(t, "POST", "/api/v1/circuits/Mailer.send/open", operatorKey, api.CircuitAction{Reason: "x"})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Equal(t, "function", r.apiError(t).Details["field"])
	assert.Contains(t, r.apiError(t).Message, "must be CONTEXT.PROCESSOR.NAME")

	r = e.do(t, "POST", path+"/open", operatorKey, api.CircuitAction{Reason: "smtp maintenance", DryRun: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var ch api.CircuitChange
	r.json(t, &ch)
	assert.True(t, ch.DryRun)
	assert.True(t, ch.Changed)
	assert.Equal(t, "OPEN", ch.Circuit.Phase)
	_, _, err := store.Get(t.Context(), circuit.Function{Context: "order", Processor: "Mailer", Name: "send"})
	require.ErrorIs(t, err, circuit.ErrNotFound, "a dry run writes nothing")

	r = e.do(t, "POST", path+"/open", operatorKey, api.CircuitAction{Reason: "smtp maintenance"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &ch)
	assert.True(t, ch.Changed)
	assert.Equal(t, "OPEN", ch.Circuit.Phase)
	assert.True(t, ch.Circuit.Forced)
	require.Len(t, ch.Circuit.Transitions, 1)
	assert.Equal(t, api.CircuitTransition{Seq: 1, At: t0, From: "CLOSED", To: "OPEN", Cause: "operator", Actor: "bob", Reason: "smtp maintenance"},
		ch.Circuit.Transitions[0], "audited with the operator's name and reason")
	r = e.do(t, "POST", path+"/open", operatorKey, api.CircuitAction{Reason: "again"})
	require.Equal(t, http.StatusOK, r.status)
	r.json(t, &ch)
	assert.False(t, ch.Changed, "already open")

	require.Eventually(t, func() bool {
		r := e.do(t, "GET", "/api/v1/circuits", viewerKey, nil)
		var l api.CircuitList
		r.json(t, &l)
		return len(l.Circuits) == 1 && l.Circuits[0].Phase == "OPEN" && l.Circuits[0].Stored
	}, 10*time.Second, 5*time.Millisecond, "the list shows it")

	e.clock.Set(time.UnixMilli(t0).Add(time.Minute))
	r = e.do(t, "POST", path+"/close", operatorKey, api.CircuitAction{Reason: "smtp is back"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &ch)
	assert.Equal(t, "CLOSED", ch.Circuit.Phase)
	assert.Equal(t, t0, ch.Circuit.IncidentFrom)
	assert.Equal(t, t0+60000, ch.Circuit.IncidentTo, "closing ends the incident: its records are drained")

	// A stored circuit that does not validate is shown as such.
	_, err = store.KV().Put(t.Context(), "order.Mailer.audit", []byte(`{"phase":"OPEN"}`))
	require.NoError(t, err)
	r = e.do(t, "GET", "/api/v1/circuits/order.Mailer.audit", viewerKey, nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "InvalidCircuit", r.apiError(t).Code)
	require.Eventually(t, func() bool {
		r := e.do(t, "GET", "/api/v1/circuits", viewerKey, nil)
		var l api.CircuitList
		r.json(t, &l)
		return len(l.Invalid) == 1 && l.Invalid[0].Key == "order.Mailer.audit"
	}, 10*time.Second, 5*time.Millisecond, "the list names the invalid one")

	r = e.do(t, "GET", "/api/v1/drains", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var dl api.DrainList
	r.json(t, &dl)
	assert.Empty(t, dl.Drains)
	assert.Empty(t, dl.Invalid)

	r = e.do(t, "GET", "/api/v1/circuits?x=1", viewerKey, nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
}

func TestCircuitsAPIWithoutCircuits(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/api/v1/circuits", "/api/v1/circuits/a.b.c", "/api/v1/drains"} {
		r := e.do(t, "GET", p, viewerKey, nil)
		assert.Equal(t, http.StatusNotFound, r.status, p)
	}
}

// While a record's function's circuit is not closed, a prepare of it is
// refused with 409 CircuitOpen naming the circuit and the way round (its
// replay would be refused and cost a retry), one by one and in a batch;
// "probe": true makes the replay the circuit's probe, claimed for that
// record before the cool-down; a circuit an operator opened is never
// probed; once the circuit closes the prepare goes through.
func TestPrepareWhileTheCircuitIsOpen(t *testing.T) {
	e, store := circuitsEnv(t)
	ids := []string{e.create(t, 1, nil), e.create(t, 2, nil), e.create(t, 3, nil)}
	f := circuit.Of(fn)
	p, err := circuit.Policy{}.Resolve()
	require.NoError(t, err)
	_, _, _, err = store.Update(t.Context(), f, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), p, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Instance: "i1"})
	})
	require.NoError(t, err)
	path := func(id, cmd string) string { return "/api/v1/records/" + id + "/" + cmd }

	r := e.do(t, "POST", path(ids[0], "prepare_compensation"), operatorKey, nil)
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	ae := r.apiError(t)
	assert.Equal(t, circuit.ErrorCode, ae.Code)
	assert.Contains(t, ae.Message, "the circuit of order.Mailer.onOrderPlaced is OPEN since")
	assert.Contains(t, ae.Message, `"probe": true`)
	assert.Equal(t, "order.Mailer.onOrderPlaced", ae.Details["function"])
	r = e.do(t, "POST", path(ids[0], "force_prepare_compensation"), operatorKey, api.PrepareRequest{Reason: "now"})
	require.Equal(t, http.StatusConflict, r.status, "force-prepare too: %s", r.body)
	st0, _, err := e.svc.Get(t.Context(), ids[0])
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusFailed, st0.Status, "nothing prepared")

	var res api.BatchResult
	r = e.do(t, "POST", "/api/v1/batch/prepare_compensation", operatorKey, map[string]any{"filter": map[string]any{"processor": "Mailer"}, "reason": "x", "requestId": "during-the-outage"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r.json(t, &res)
	assert.Equal(t, map[string]int{api.OutcomeRejected: 3}, res.Counts, "a batch never prepares a record its circuit would refuse")
	assert.Equal(t, circuit.ErrorCode, res.Records[0].Code)

	r = e.do(t, "POST", path(ids[1], "prepare_compensation"), operatorKey, api.PrepareRequest{Reason: "probe it", Probe: true})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	st, _, err := store.Get(t.Context(), f)
	require.NoError(t, err)
	assert.Equal(t, circuit.HalfOpen, st.Phase, "claimed before the cool-down")
	pr, ok := st.ProbeOf(e.clock.Now(), ids[1])
	require.True(t, ok, "the replay of that record is the probe")
	assert.Equal(t, "operator bob", pr.Instance)
	r = e.do(t, "POST", path(ids[2], "prepare_compensation"), operatorKey, api.PrepareRequest{Probe: true})
	require.Equal(t, http.StatusConflict, r.status, "one probe at a time: %s", r.body)
	assert.Contains(t, r.apiError(t).Message, "has a probe under way")

	_, _, _, err = store.Update(t.Context(), f, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "maintenance"})
	})
	require.NoError(t, err)
	r = e.do(t, "POST", path(ids[2], "prepare_compensation"), operatorKey, api.PrepareRequest{Probe: true})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Contains(t, r.apiError(t).Message, "was opened by an operator")

	_, _, _, err = store.Update(t.Context(), f, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, e.clock.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "back"})
	})
	require.NoError(t, err)
	r = e.do(t, "POST", path(ids[2], "prepare_compensation"), operatorKey, nil)
	require.Equal(t, http.StatusOK, r.status, "closed: prepared as usual: %s", r.body)
}
