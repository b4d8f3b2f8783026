package processor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
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
		{"bad retry spec", fn("P", "x"), h, []processor.FunctionOption{processor.WithRetrySpec(aggregate.RetrySpec{MaxRetries: -1})}, processor.ErrInvalidFunction, "maxRetries must be greater than or equal to 0"},
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
	stateFn := processor.Function{Processor: "Cache", Name: "s", Kind: aggregate.KindStateEvent, AggregateTypes: []string{"order"}}
	require.NoError(t, p.Register(stateFn, newCounter().handle))
	err := p.Run(context.Background())
	require.ErrorIs(t, err, processor.ErrInvalidFunction, "a STATE_EVENT function needs an evolve")
	assert.Contains(t, err.Error(), "RegisterAggregate")

	p = e.processor()
	require.NoError(t, p.Register(fn("Mailer", "a"), newCounter().handle))
	run(t, p)
	assert.ErrorIs(t, p.Register(fn("Mailer", "b"), newCounter().handle), processor.ErrRunning)
	assert.ErrorIs(t, p.Run(context.Background()), processor.ErrRunning)
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
