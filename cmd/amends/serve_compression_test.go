package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
)

// serve stores a new compensation stream and views bucket with S2
// compression; --compression none leaves them as they were.
func TestServeCompressesNewStreams(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want jetstream.StoreCompression
	}{
		{nil, jetstream.S2Compression},
		{[]string{"--compression", "none"}, jetstream.NoCompression},
	} {
		var c cli
		r := c.startServe(t, append([]string{"serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1"}, tc.args...)...)
		js := connectJS(t, r.info.NATSURL)
		stream := waitForStream(t, js, "AMENDS_compensation")
		views := waitForStream(t, js, "KV_"+projection.DefaultBucket)
		require.Equal(t, exitOK, r.stop(t), c.stderr.String())
		assert.Equal(t, tc.want, stream.Config.Compression, "%v: the compensation stream", tc.args)
		assert.Equal(t, tc.want, views.Config.Compression, "%v: the views bucket", tc.args)
	}
}

// A compensation stream made before compression is kept as it is, and
// serve says so; --compress-existing changes it in place, keeping its
// record.
func TestServeCompressesAnExistingStreamOnlyWhenAsked(t *testing.T) {
	srv := natstest.NewListening(t)
	js := connectJS(t, srv.ClientURL())
	old, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context))
	require.NoError(t, err)
	require.NoError(t, old.Provision(t.Context(), aggregate.Context))
	f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "send"}
	_, err = aggregate.NewService(old).Execute(t.Context(), aggregate.RecordID("evt-1", f), aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-1", AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1"}, Version: 1},
		Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: time.Now().UnixMilli(),
		RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 30},
	}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	name := old.StreamName(aggregate.Context)
	compression := func() jetstream.StoreCompression {
		st, err := js.Stream(t.Context(), name)
		require.NoError(t, err)
		return st.CachedInfo().Config.Compression
	}

	var c cli
	r := c.startServe(t, "serve", "--nats-url", srv.ClientURL())
	require.Equal(t, exitOK, r.stop(t), c.stderr.String())
	assert.Equal(t, jetstream.NoCompression, compression(), "an existing stream keeps its compression")
	assert.Contains(t, c.stderr.String(), "serve --compress-existing changes it in place")

	c = cli{}
	r = c.startServe(t, "serve", "--nats-url", srv.ClientURL(), "--compress-existing")
	require.Equal(t, exitOK, r.stop(t), c.stderr.String())
	assert.Equal(t, jetstream.S2Compression, compression())
	assert.Contains(t, c.stderr.String(), "--compress-existing: the stream is compressed from now on")
	st, err := js.Stream(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.CachedInfo().State.Msgs, "the record is kept")
}
