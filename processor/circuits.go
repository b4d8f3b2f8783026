package processor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/transient"
)

// Every function has a circuit (package circuit), on by default with
// circuit.DefaultPolicy: p.try asks its breaker before each call, live,
// replay, release or range replay alike, and tells it how the call went.
// While the circuit is open the function is not called: the call's error
// is a *circuit.OpenError, recorded at once (errorCode CircuitOpen) like
// any final failure, without immediate retries. The circuits are shared
// by the processor's instances in a KV bucket (WithCircuitStore; by
// default circuit.DefaultBucket on the processor's JetStream).

// Circuit sets the function's circuit policy (see circuit.Policy; the
// zero Policy is circuit.DefaultPolicy), replacing the processor's
// (WithCircuitPolicy). circuit.Policy{Off: true} turns the circuit off:
// the function is always called. An invalid policy is ErrInvalidFunction
// naming the field.
func Circuit(policy circuit.Policy) FunctionOption {
	return func(f *function) error {
		if !policy.Off {
			p, err := policy.Resolve()
			if err != nil {
				return f.invalid("%v", err)
			}
			policy = p
		}
		f.circuit = &policy
		return nil
	}
}

// WithCircuit is Circuit.
//
// Deprecated: use Circuit; a function's options carry no With (see
// docs/architecture.md, "Names"). It goes in the next release.
func WithCircuit(policy circuit.Policy) FunctionOption { return Circuit(policy) }

// WithCircuitPolicy sets the circuit policy of the functions that set
// none with Circuit (default circuit.DefaultPolicy; Off turns them
// off). An invalid policy is ErrInvalidOption naming the field.
func WithCircuitPolicy(policy circuit.Policy) Option {
	return func(o *options) error {
		if !policy.Off {
			p, err := policy.Resolve()
			if err != nil {
				return invalidOption("%v", err)
			}
			policy = p
		}
		o.circuitPolicy = policy
		return nil
	}
}

// WithCircuitStore shares the circuits in store (default: Run opens
// circuit.DefaultBucket on the processor's JetStream). All instances of a
// processor, and the control plane that shows and steers the circuits,
// must use the same bucket.
func WithCircuitStore(store *circuit.Store) Option {
	return func(o *options) error {
		if store == nil {
			return invalidOption("circuit store is nil")
		}
		o.circuitStore = store
		return nil
	}
}

// FailureDescriber is implemented by a FailureRecorder that can say what
// the record of a failure would carry (recorder.Recorder does): its
// details, fingerprint included, and classification. A circuit that opens
// keeps that of the last failure, so that the records of the calls it
// refuses carry its message and fingerprint; without a describer they
// carry its message and code, and the recorder fingerprints those.
type FailureDescriber interface {
	Describe(f aggregate.FunctionInfo, err error, rules failure.Rules) (aggregate.ErrorDetails, aggregate.Recoverability)
}

// Circuit returns function (processor, name)'s circuit as this instance
// last saw it, and false if no such function is registered or Run has not
// started its circuits yet. Safe for concurrent use.
func (p *Processor) Circuit(processor, name string) (circuit.State, bool) {
	f, ok := p.lookup(processor, name)
	if !ok || f.breaker() == nil {
		return circuit.State{}, false
	}
	return f.breaker().State(), true
}

// startCircuits opens the circuits bucket (through transient errors, for
// up to ProvisionTimeout) and gives every function its breaker. It returns
// the set to run. A bucket that cannot be opened (say the NATS user may
// not create it) leaves each circuit on this instance alone, with a
// warning: a function is never kept from running for it.
func (p *Processor) startCircuits(ctx context.Context) (*circuit.Set, error) {
	store := p.o.circuitStore
	if store == nil && p.anyCircuit() {
		octx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
		defer cancel()
		// Stored times are checked against the wall clock (the instances'
		// clocks), whatever clock the processor decides with; a stored
		// circuit that does not validate goes to the processor's quarantine.
		var sopts []circuit.StoreOption
		if p.o.quarantine != nil {
			sopts = append(sopts, circuit.WithQuarantine(p.o.quarantine))
		}
		err := transient.Retry(octx, p.o.logger, "the circuit bucket "+circuit.DefaultBucket, func(ctx context.Context) error {
			var err error
			store, err = circuit.OpenStore(ctx, p.js, sopts...)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("processor of context %s: circuits: %w", p.context, err)
			}
			store = nil
			p.o.logger.Warn("amends processor: the circuit bucket cannot be opened; each circuit is kept on this instance alone, not shared with the other instances nor shown to operators",
				"processor_context", p.context, "bucket", circuit.DefaultBucket, "err", err)
		}
	}
	set := circuit.NewSet(store, p.context, p.instance, p.o.logger.With("processor_context", p.context), p.o.clock)
	for _, g := range p.groups {
		for _, f := range g.functions {
			policy := p.o.circuitPolicy
			if f.circuit != nil {
				policy = *f.circuit
			}
			b, err := set.Breaker(circuit.Of(f.info), policy)
			if err != nil {
				return nil, f.invalid("%v", err)
			}
			f.br.Store(b)
		}
	}
	return set, nil
}

// anyCircuit reports whether a function has its circuit on: without one,
// no bucket is opened.
func (p *Processor) anyCircuit() bool {
	for _, g := range p.groups {
		for _, f := range g.functions {
			if (f.circuit == nil && !p.o.circuitPolicy.Off) || (f.circuit != nil && !f.circuit.Off) {
				return true
			}
		}
	}
	return false
}

// runCircuits runs set until stop ends and returns once it has read the
// circuits, ctx ended or a while has passed: an instance that cannot read
// them starts with its circuits closed and catches up.
func (p *Processor) runCircuits(ctx, stop context.Context, set *circuit.Set, wg *sync.WaitGroup) {
	wg.Go(func() { _ = set.Run(stop) })
	select {
	case <-set.Ready():
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		p.o.logger.Warn("amends processor: the circuits could not be read within 10s; starting with them closed", "processor_context", p.context)
	}
}

// failureOf describes err of f for its circuit, through the recorder when
// it can describe failures.
func (p *Processor) failureOf(f *function, err error) circuit.Failure {
	if p.describer != nil {
		d, r := p.describer.Describe(f.info, err, f.rules)
		return circuit.Failure{Code: d.ErrorCode, Message: d.ErrorMsg, Fingerprint: d.Fingerprint, Recoverable: r}
	}
	code := ""
	if c, ok := err.(interface{ Code() string }); ok {
		code = c.Code()
	}
	return circuit.Failure{Code: code, Message: err.Error(), Recoverable: failure.Classify(err, f.rules)}
}
