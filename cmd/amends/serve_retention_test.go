package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

func TestServeMigratesAStreamThatDeniesPurges(t *testing.T) {
	// Given a NATS server whose compensation stream was created before retention
	srv := natstest.NewListening(t)
	js := connectJS(t, srv.ClientURL())
	old, err := jsstore.New(js)
	require.NoError(t, err)
	require.NoError(t, old.Provision(t.Context(), aggregate.Context))
	svc := aggregate.NewService(old)
	f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "send"}
	_, err = svc.Execute(t.Context(), aggregate.RecordID("evt-1", f), aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1"}, Version: 1},
		Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: t0,
		RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 30},
	}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	name := old.StreamName(aggregate.Context)

	// When serve starts without --migrate-stream, the stream keeps denying purges
	var c cli
	r := c.startServe(t, "serve", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, r.stop(t))
	st, err := js.Stream(t.Context(), name)
	require.NoError(t, err)
	assert.True(t, st.CachedInfo().Config.DenyPurge)
	assert.Contains(t, c.stderr.String(), "denies purges", "serve says why retention removes nothing")

	// And with it, the stream is migrated and its record kept
	backup := t.TempDir()
	c = cli{}
	r = c.startServe(t, "serve", "--nats-url", srv.ClientURL(), "--migrate-stream", backup)
	require.Equal(t, 0, r.stop(t), c.stderr.String())
	st, err = js.Stream(t.Context(), name)
	require.NoError(t, err)
	assert.False(t, st.CachedInfo().Config.DenyPurge, "the migrated stream allows purges")
	assert.Equal(t, uint64(1), st.CachedInfo().State.Msgs)
	ents, err := os.ReadDir(backup)
	require.NoError(t, err)
	assert.Len(t, ents, 2, "the snapshot and its configuration are kept")
	assert.Contains(t, c.stderr.String(), "the compensation stream allows purges now")
}
