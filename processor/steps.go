package processor

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
)

// The per-call concerns are steps around one Handler, the function's own:
// each step wraps the next one and may act before the call, refuse it, or
// read its result. A function's chain is composed once, when it is
// registered; call runs it once per call, whatever runs the attempt (a
// live task, a replay task, a hold release or a range replay). What a call
// leaves for the steps outside it and for the attempt (its class, whether
// a retry follows) is kept in the Delivery's unexported fields.

// callStep wraps a Handler in one concern. A step that does not apply to
// a function returns next itself, so the chain is no longer than needed.
type callStep func(next Handler) Handler

// chain is f's handler behind its steps, outermost first: counted,
// guarded (the circuit), stated (a STATE_EVENT function's state), retried
// (is an immediate retry next), classified (by f's rules), traced (a span)
// and invoked (the call, a panic as an error).
func (p *Processor) chain(f *function) Handler {
	return compose(f.handler, counted(f), p.guarded(f), p.stated(f), retried(f), classified(f), p.traced(f), invoked(f))
}

// compose wraps h in steps, the first outermost.
func compose(h Handler, steps ...callStep) Handler {
	for i := len(steps) - 1; i >= 0; i-- {
		h = steps[i](h)
	}
	return h
}

// call makes call d.n of f on d through f's chain (n 0 is the attempt's
// first call, then its immediate retries). It returns the call's error
// and, when an immediate retry follows (again), the wait before it.
func (p *Processor) call(ctx context.Context, f *function, d *Delivery) (wait time.Duration, again bool, err error) {
	d.at = p.o.clock.Now()
	if d.started.IsZero() {
		d.started = d.at // the attempt's start: its immediate retries belong to it
	}
	d.class, d.again, d.unjudged = "", false, false
	err = f.run(ctx, d)
	if !d.again {
		return 0, false, err
	}
	return f.retry.Backoff.Delay(d.n), true, err
}

// counted counts the call's outcome in f's metrics: a success, or a
// failure with no retry after it (a refusal, a state that could not be
// built and a final failure alike).
func counted(f *function) callStep {
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) error {
			err := next(ctx, d)
			switch {
			case err == nil:
				f.stats.Succeeded.Add(1)
			case !d.again:
				f.stats.Failed.Add(1)
			}
			return err
		}
	}
}

// guarded puts f behind its circuit (circuits.go): while the circuit is
// open the call is not made and its error is the circuit's
// *circuit.OpenError; otherwise the circuit weighs the call's outcome,
// with a retry to come (d.again) as pending. A call that could not be made
// (d.unjudged) tells it nothing: a probe times out.
func (p *Processor) guarded(f *function) callStep {
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) error {
			br := f.breaker()
			if br == nil {
				return next(ctx, d)
			}
			ticket, refused := admit(ctx, br, f, d, d.at)
			if refused != nil {
				return refused
			}
			err := next(ctx, d)
			if !d.unjudged {
				p.observe(ctx, br, ticket, f, d, d.at, err, d.again)
			}
			return err
		}
	}
}

// stated gives a STATE_EVENT function the aggregate's state after the
// delivered stream (state.go), once per delivery; failing to build it is
// the call's failure, not the function's answer (d.unjudged), and is not
// retried at once.
func (p *Processor) stated(f *function) callStep {
	return func(next Handler) Handler {
		if f.info.FunctionKind != aggregate.KindStateEvent {
			return next
		}
		return func(ctx context.Context, d *Delivery) error {
			if d.State == nil {
				state, err := p.stateAfter(ctx, d.Stream, d.cacheState)
				if err != nil {
					d.unjudged = true
					return err
				}
				d.State = state
			}
			return next(ctx, d)
		}
	}
}

// retried decides whether an immediate retry follows a failed call
// (d.again): the failure is RECOVERABLE by the global classification (as
// the reference's retry filter has it), f has retries left, the processor
// is not stopping and f's circuit still passes calls.
func retried(f *function) callStep {
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) error {
			err := next(ctx, d)
			if err == nil || d.n >= f.retry.Retries || ctx.Err() != nil {
				return err
			}
			br := f.breaker()
			d.again = failure.Classify(err, failure.Rules{}) == aggregate.Recoverable && (br == nil || br.Passing())
			return err
		}
	}
}

// classified classifies a failure by f's rules, once, for the circuit and
// the record (d.class).
func classified(f *function) callStep {
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) error {
			err := next(ctx, d)
			if err != nil {
				d.class = failure.Classify(err, f.rules)
			}
			return err
		}
	}
}

// traced runs the call in a span (trace.go).
func (p *Processor) traced(f *function) callStep {
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) error { return p.tracedCall(ctx, f, d, next) }
	}
}

// invoked counts the call and turns a panic of the handler into an error
// with its stack.
func invoked(f *function) callStep {
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) (err error) {
			f.stats.Calls.Add(1)
			defer func() {
				if r := recover(); r != nil {
					err = errors.WithStackDepth(errors.Newf("%s.%s panicked: %v", f.info.ProcessorName, f.info.Name, r), 1)
				}
			}()
			return next(ctx, d)
		}
	}
}
