package processor_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
)

func TestRegisterRejects(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	h := newCounter().handle
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), h))
	cases := []struct {
		name string
		fn   processor.Function
		h    processor.Handler
		opts []processor.FunctionOption
		want error
		msg  string
	}{
		{"same identity", fn("Mailer", "onPlaced", "other_event"), h, nil, processor.ErrDuplicateFunction, "already registered"},
		{"blank name", fn("Mailer", ""), h, nil, processor.ErrInvalidFunction, "function name is empty"},
		{"bad processor name", fn("Mail.er", "x"), h, nil, processor.ErrInvalidFunction, "only [A-Za-z0-9_-]"},
		{"no aggregate type", processor.Function{Processor: "P", Name: "x"}, h, nil, processor.ErrInvalidFunction, "at least one aggregate type"},
		{"nil handler", fn("P", "x"), nil, nil, processor.ErrInvalidFunction, "handler is nil"},
		{"bad kind", processor.Function{Processor: "P", Name: "x", Kind: aggregate.KindCommand, AggregateTypes: []string{"order"}}, h, nil, processor.ErrInvalidFunction, "EVENT or STATE_EVENT"},
		{"bad retry spec", fn("P", "x"), h, []processor.FunctionOption{processor.RetrySpec(aggregate.RetrySpec{MaxRetries: -1})}, processor.ErrInvalidFunction, "maxRetries must be greater than or equal to 0"},
		{"bad immediate retry", fn("P", "x"), h, []processor.FunctionOption{processor.ImmediateRetry(processor.Retry{Retries: -1})}, processor.ErrInvalidFunction, "immediate retries must be >= 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.Register(c.fn, c.h, c.opts...)
			require.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
	assert.ErrorIs(t, p.RegisterAggregate("order", processor.Evolver{}), processor.ErrInvalidFunction)
}

func TestRunRejects(t *testing.T) {
	e := newEnv(t)
	p := e.processor()
	require.NoError(t, p.Register(fn("Mailer", "a"), newCounter().handle))
	run(t, p)
	err := p.Register(fn("Mailer", "b"), newCounter().handle)
	require.ErrorIs(t, err, processor.ErrRunning)
	assert.Equal(t, "register Mailer.b: functions must be registered before Run or Start; build another Processor to add functions: processor: already running", err.Error())
	err = p.RegisterAggregate("order", processor.Evolve(initialOrder, evolveOrder))
	require.ErrorIs(t, err, processor.ErrRunning)
	assert.Equal(t, "register aggregate order: aggregates must be registered before Run or Start: processor: already running", err.Error())
	assert.ErrorIs(t, p.Run(context.Background()), processor.ErrRunning)
	assert.ErrorIs(t, p.Start(context.Background()), processor.ErrRunning)
}

// The messages of refused registrations name the function, carry one
// sentinel and no doubled punctuation.
func TestRegisterMessages(t *testing.T) {
	e := newEnv(t)
	stateFn := processor.Function{Processor: "Cache", Name: "s", Kind: aggregate.KindStateEvent, AggregateTypes: []string{"order"}}
	h := newCounter().handle
	cases := []struct {
		name     string
		register func(p *processor.Processor) error
		msg      string
	}{
		{"retry spec", func(p *processor.Processor) error {
			return p.Register(fn("Billing", "badSpec"), h, processor.RetrySpec(aggregate.RetrySpec{MaxRetries: -1}))
		}, "function Billing.badSpec: retry spec: maxRetries must be greater than or equal to 0: processor: invalid function"},
		{"immediate retry", func(p *processor.Processor) error {
			return p.Register(fn("Billing", "x"), h, processor.ImmediateRetry(processor.Retry{Retries: -1}))
		}, "function Billing.x: immediate retry: immediate retries must be >= 0, got -1: processor: invalid function"},
		{"event name", func(p *processor.Processor) error { return p.Register(fn("Billing", "x", "invoice.paid"), h) },
			`function Billing.x: event name "invoice.paid" has '.' at byte 7; only [A-Za-z0-9_-] are allowed: processor: invalid function`},
		{"STATE_EVENT without evolve", func(p *processor.Processor) error { return p.Register(stateFn, h) },
			`function Cache.s: a STATE_EVENT function of aggregate type order needs its evolve: call RegisterAggregate("order", ...) before registering it: processor: invalid function`},
		{"snapshot without evolve", func(p *processor.Processor) error { return p.Snapshot("order", snapshotBucket(t, e)) },
			`function snapshot.order: a STATE_EVENT function of aggregate type order needs its evolve: call RegisterAggregate("order", ...) before registering it: processor: invalid function`},
		{"unknown event", func(p *processor.Processor) error {
			if err := p.RegisterAggregate("order", processor.Evolve(initialOrder, evolveOrder, "order_placed", "order_paid")); err != nil {
				return err
			}
			return p.Register(fn("Billing", "onPaid", "order_paid", "order_payed"), h)
		}, "function Billing.onPaid: it reacts to order_payed, which aggregate type order does not have (its events: order_paid, order_placed); check the spelling: processor: invalid function"},
		{"unknown event registered before the aggregate", func(p *processor.Processor) error {
			if err := p.Register(fn("Billing", "onPaid", "order_payed"), h); err != nil {
				return err
			}
			return p.RegisterAggregate("order", processor.Evolve(initialOrder, evolveOrder, "order_placed", "order_paid"))
		}, "function Billing.onPaid: it reacts to order_payed, which aggregate type order does not have (its events: order_paid, order_placed); check the spelling: processor: invalid function"},
		{"bad context", func(*processor.Processor) error { _, err := processor.New(e.js, e.store, "bad.context"); return err },
			`context "bad.context" has '.' at byte 3; only [A-Za-z0-9_-] are allowed: processor: invalid option`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.register(e.processor())
			require.Error(t, err)
			assert.Equal(t, c.msg, err.Error())
		})
	}

	// Known events that match, a function of every event, and an
	// aggregate whose events are not known are all accepted.
	p := e.processor()
	require.NoError(t, p.RegisterAggregate("order", processor.Evolve(initialOrder, evolveOrder, "order_placed")))
	require.NoError(t, p.Register(fn("Billing", "onPlaced", "order_placed"), h))
	require.NoError(t, p.Register(fn("Billing", "onAny"), h))
	require.NoError(t, p.Register(stateFn, h), "the evolve was registered first")
	p = e.processor()
	require.NoError(t, p.RegisterAggregate("order", processor.Evolve(initialOrder, evolveOrder)))
	require.NoError(t, p.Register(fn("Billing", "onWhatever", "order_whatever"), h))
}

func TestNewRejects(t *testing.T) {
	e := newEnv(t)
	for name, opt := range map[string]processor.Option{
		"concurrency":  processor.WithConcurrency(0),
		"ack wait":     processor.WithAckWait(0),
		"retry":        processor.WithImmediateRetry(processor.Retry{Retries: 1, Backoff: processor.Backoff{Jitter: 2}}),
		"max pending":  processor.WithMaxAckPending(0),
		"nil clock":    processor.WithClock(nil),
		"nil sleeper":  processor.WithSleeper(nil),
		"replay lanes": processor.WithReplayConcurrency(0),
	} {
		_, err := processor.New(e.js, e.store, ctxName, opt)
		assert.ErrorIs(t, err, processor.ErrInvalidOption, name)
	}
	_, err := processor.New(e.js, e.store, "bad.context")
	assert.ErrorIs(t, err, processor.ErrInvalidOption)
}

func initialOrder(id eventstore.AggregateID) cart { return cart{ID: id.ID} }

func evolveOrder(c cart, _ *eventstore.Event) (cart, error) { return c, nil }

func snapshotBucket(t *testing.T, e *env) jetstream.KeyValue {
	t.Helper()
	kv, err := e.js.CreateOrUpdateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "register_snapshots"})
	require.NoError(t, err)
	return kv
}
