package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/scheduler"
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
	drains, err := scheduler.OpenDrains(t.Context(), base.js, "", 1)
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
