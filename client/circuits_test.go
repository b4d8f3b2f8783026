package client_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/server"
)

func TestTypedCircuitsAndDrains(t *testing.T) {
	s := newStack(t)
	js := natstest.New(t).JetStream()
	store, err := circuit.OpenStore(t.Context(), js)
	require.NoError(t, err)
	w := store.Watcher("", nil, nil)
	runInBackground(t, w.Run)
	<-w.Ready()
	drains, err := circuit.OpenDrains(t.Context(), js, "", 1)
	require.NoError(t, err)
	s.cfg.Circuits = &server.Circuits{Watcher: w, Store: store, Drains: drains}
	s.serve(t)
	c := s.client(t)
	ctx := t.Context()

	_, err = c.Circuit(ctx, "not-a-function")
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, http.StatusBadRequest, ce.Status)

	ch, err := c.OpenCircuit(ctx, "order.Mailer.send", "maintenance", true)
	require.NoError(t, err)
	assert.True(t, ch.DryRun)
	got, err := c.Circuit(ctx, "order.Mailer.send")
	require.NoError(t, err)
	assert.Equal(t, "CLOSED", got.Phase, "the dry run changed nothing")
	ch, err = c.OpenCircuit(ctx, "order.Mailer.send", "maintenance", false)
	require.NoError(t, err)
	assert.Equal(t, "OPEN", ch.Circuit.Phase)
	ch, err = c.CloseCircuit(ctx, "order.Mailer.send", "done", false)
	require.NoError(t, err)
	assert.Equal(t, "CLOSED", ch.Circuit.Phase)
	assert.Len(t, ch.Circuit.Transitions, 2)
	require.Eventually(t, func() bool {
		l, err := c.Circuits(ctx)
		return err == nil && len(l.Circuits) == 1 && l.Circuits[0].Closed == 1
	}, 30*time.Second, 5*time.Millisecond)
	d, err := c.Drains(ctx)
	require.NoError(t, err)
	assert.Empty(t, d.Drains)
}
