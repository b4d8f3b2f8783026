package main

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
)

// serve --migrate-views projects the views bucket keyed by processor from
// the event store and exits: a dry run first changes nothing, the run
// leaves a view of every record at its last version (one of them moved to
// another processor), a second run writes nothing, and the bucket of the
// earlier version is left as it is.
func TestServeMigratesTheViewsFromTheEventStore(t *testing.T) {
	srv := natstest.NewListening(t)
	js := connectJS(t, srv.ClientURL())
	store, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context))
	require.NoError(t, err)
	require.NoError(t, store.Provision(t.Context(), aggregate.Context))
	svc := aggregate.NewService(store)
	versions := map[string]uint64{}
	for i := range 30 {
		f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: []string{"Mailer", "Billing", "Stock"}[i%3], Name: "send"}
		id := aggregate.RecordID(fmt.Sprintf("evt-%d", i), f)
		r, err := svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: fmt.Sprintf("evt-%d", i), AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1"}, Version: 1},
			Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: t0,
			RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 30},
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		versions[id] = r.Version
		if i == 0 {
			r, err = svc.Execute(t.Context(), id, aggregate.ChangeFunction{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Invoicing", Name: "send"}, aggregate.Meta{Actor: "test"})
			require.NoError(t, err)
			versions[id] = r.Version
		}
	}
	legacy, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: projection.LegacyBucket})
	require.NoError(t, err)
	_, err = legacy.Put(t.Context(), "some-record", []byte(`{"version":1}`))
	require.NoError(t, err)

	var c cli
	require.Equal(t, 2, c.run(t, "serve", "--nats-url", srv.ClientURL(), "--dry-run"), "--dry-run alone is a usage error")
	assert.Contains(t, c.stderr.String(), "--dry-run only applies to --migrate-views")

	c = cli{}
	require.Equal(t, 0, c.run(t, "serve", "--nats-url", srv.ClientURL(), "--migrate-views", "--dry-run"), c.stderr.String())
	assert.Contains(t, c.stderr.String(), "nothing changed")
	_, err = js.KeyValue(t.Context(), projection.DefaultBucket)
	require.Error(t, err, "a dry run creates no bucket")

	c = cli{}
	require.Equal(t, 0, c.run(t, "serve", "--nats-url", srv.ClientURL(), "--migrate-views"), c.stderr.String())
	assert.Contains(t, c.stderr.String(), "the views bucket holds every record")
	views, err := projection.OpenViews(t.Context(), js)
	require.NoError(t, err)
	for id, v := range versions {
		got, err := projection.GetView(t.Context(), views, id)
		require.NoError(t, err, id)
		assert.Equal(t, v, got.Version, id)
	}
	status, err := views.Status(t.Context())
	require.NoError(t, err)
	written := status.(interface{ StreamInfo() *jetstream.StreamInfo }).StreamInfo().State.LastSeq

	c = cli{}
	require.Equal(t, 0, c.run(t, "serve", "--nats-url", srv.ClientURL(), "--migrate-views"), c.stderr.String())
	status, err = views.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, written, status.(interface{ StreamInfo() *jetstream.StreamInfo }).StreamInfo().State.LastSeq, "a second run writes nothing")
	old, err := legacy.Get(t.Context(), "some-record")
	require.NoError(t, err, "the legacy bucket is left as it is")
	assert.Equal(t, `{"version":1}`, string(old.Value()))

	c = cli{}
	r := c.startServe(t, "serve", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, r.stop(t))
	assert.Contains(t, c.stderr.String(), "the views bucket of an earlier version is no longer read", "serve says the legacy bucket can go")
}
