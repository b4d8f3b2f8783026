package processor

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// Processor runs the functions of one bounded context: one durable
// consumer per processor name on the context's stream, and one replay
// consumer on the compensation records. Register functions, then Run.
//
// Registration methods are safe for concurrent use but fail with
// ErrRunning once Run has started. Metrics may be read at any time.
type Processor struct {
	js      jetstream.JetStream
	store   eventstore.Store[jetstream.Msg]
	context string
	o       options
	// instance and build name this instance in attempt runs (attemptrun.go).
	instance string
	build    Build
	// describer is the recorder, if it describes failures (circuits.go).
	describer FailureDescriber

	mu        sync.Mutex
	running   bool
	groups    []*group
	byName    map[string]*group
	functions map[key]*function
	evolvers  map[string]Evolver

	states   *stateCache
	metrics  Metrics
	failures digest               // recorded failures since the last summary line (digest.go)
	holds    *holdRuntime         // nil without Ordered functions
	ranges   *rangeRuntime        // nil without WithRangeReplays
	keys     keyTable[laneWaiter] // the calls running, one per function and aggregate (keys.go)

	stopOnce sync.Once
	runErr   error // Run's result, set before closed is closed
	stopCh   chan struct{}
	ready    chan struct{}
	closed   chan struct{}
}

// key is a function's identity within the context.
type key struct{ processor, name string }

// group is the functions of one processor name: one durable consumer.
type group struct {
	name      string
	functions []*function
	byType    map[string][]*function
	ordered   []*function // the Ordered ones
	live      *runner     // its consumer's, set by Run before anything calls a function
}

// New returns a Processor of the bounded context contextName, reading its
// events through store (whose streams live in js). It does no I/O. An
// invalid context or option, or a nil js or store, returns an error
// wrapping ErrInvalidOption.
func New(js jetstream.JetStream, store eventstore.Store[jetstream.Msg], contextName string, opts ...Option) (*Processor, error) {
	if js == nil || store == nil || reflect.ValueOf(store).Kind() == reflect.Pointer && reflect.ValueOf(store).IsNil() {
		return nil, invalidOption("jetstream and store must not be nil")
	}
	if err := eventstore.ValidateName("context", contextName); err != nil {
		return nil, invalidOption("%s", reason(err))
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.maxAckPending == 0 {
		o.maxAckPending = max(1000, o.concurrency*o.laneBuffer)
	}
	p := &Processor{
		js: js, store: store, context: contextName,
		byName:    make(map[string]*group),
		functions: make(map[key]*function),
		evolvers:  make(map[string]Evolver),
		states:    newStateCache(o.stateCache),
		stopCh:    make(chan struct{}),
		ready:     make(chan struct{}),
		closed:    make(chan struct{}),
	}
	if err := o.defaultQuarantine(p); err != nil {
		return nil, err
	}
	p.o = o
	p.identify()
	return p, nil
}

// Context returns the bounded context the processor runs.
func (p *Processor) Context() string { return p.context }

// RecordID returns the id of the ExecutionFailed record of the event
// eventID failing in fn of this processor's context: the id the recorder
// gives it (aggregate.RecordID), whatever fn's kind, registered or not.
// Use it to look a failure up (Records.Load, the control plane's index,
// amends show ID). It does no I/O and is safe for concurrent use.
func (p *Processor) RecordID(eventID string, fn Function) string {
	return aggregate.RecordID(eventID, aggregate.FunctionInfo{ContextName: p.context, ProcessorName: fn.Processor, Name: fn.Name})
}

// Register adds a function. It fails with ErrDuplicateFunction if a
// function with the same (Processor, Name) exists; ErrInvalidFunction if fn
// or an option is invalid, if fn is STATE_EVENT and an aggregate type it
// reacts to has no evolve yet (call RegisterAggregate first), or if fn
// names an event its aggregate types do not have (when RegisterAggregate
// was given their event names); ErrRunning once Run has started.
func (p *Processor) Register(fn Function, h Handler, opts ...FunctionOption) error {
	f, err := newFunction(p.context, fn, h, p.o.retry, opts)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return fmt.Errorf("register %s.%s: functions must be registered before Run or Start; build another Processor to add functions: %w", fn.Processor, fn.Name, ErrRunning)
	}
	k := key{fn.Processor, fn.Name}
	if _, dup := p.functions[k]; dup {
		return fmt.Errorf("function %s.%s of context %s is already registered; identities must be unique: %w", fn.Processor, fn.Name, p.context, ErrDuplicateFunction)
	}
	if f.info.FunctionKind == aggregate.KindStateEvent {
		for _, t := range fn.AggregateTypes {
			if _, ok := p.evolvers[t]; !ok {
				return f.invalid("a STATE_EVENT function of aggregate type %s needs its evolve: call RegisterAggregate(%q, ...) before registering it", t, t)
			}
		}
	}
	if err := p.checkEvents(f); err != nil {
		return err
	}
	g := p.byName[fn.Processor]
	if g == nil {
		g = &group{name: fn.Processor, byType: make(map[string][]*function)}
		p.byName[fn.Processor] = g
		p.groups = append(p.groups, g)
	}
	f.run = p.chain(f)
	f.index = len(g.functions)
	g.functions = append(g.functions, f)
	if f.ordered {
		g.ordered = append(g.ordered, f)
	}
	for t := range f.types {
		g.byType[t] = append(g.byType[t], f)
	}
	p.functions[k] = f
	return nil
}

// checkEvents refuses a function that names an event none of its aggregate
// types has, when the event names of all its types are known. p.mu held.
func (p *Processor) checkEvents(f *function) error {
	if f.events == nil {
		return nil
	}
	var known []string
	for t := range f.types {
		ev, ok := p.evolvers[t]
		if !ok || ev.events == nil {
			return nil // some type's events are not known
		}
		known = append(known, ev.events...)
	}
	slices.Sort(known)
	known = slices.Compact(known)
	var unknown []string
	for e := range f.events {
		if _, found := slices.BinarySearch(known, e); !found {
			unknown = append(unknown, e)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	types := slices.Sorted(maps.Keys(f.types))
	return f.invalid("it reacts to %s, which aggregate type %s does not have (its events: %s); check the spelling",
		strings.Join(unknown, ", "), strings.Join(types, ", "), strings.Join(known, ", "))
}

// RegisterAggregate sets the evolve of an aggregate type, which STATE_EVENT
// functions and snapshots of that type need: register it before them. When
// ev names the type's events (Evolve's events), functions naming an event
// it does not list are refused, those registered before as well as after.
// It fails with ErrInvalidFunction for an invalid type or event name, a
// second registration, or an earlier function naming an unknown event, and
// ErrRunning after Run started.
func (p *Processor) RegisterAggregate(aggregateType string, ev Evolver) error {
	if err := eventstore.ValidateName("aggregate type", aggregateType); err != nil {
		return fmt.Errorf("register aggregate: %s: %w", reason(err), ErrInvalidFunction)
	}
	if ev.initial == nil || ev.evolve == nil {
		return fmt.Errorf("register aggregate %s: build the Evolver with Evolve: %w", aggregateType, ErrInvalidFunction)
	}
	for _, e := range ev.events {
		if err := eventstore.ValidateName("event name", e); err != nil {
			return fmt.Errorf("register aggregate %s: %s: %w", aggregateType, reason(err), ErrInvalidFunction)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return fmt.Errorf("register aggregate %s: aggregates must be registered before Run or Start: %w", aggregateType, ErrRunning)
	}
	if _, dup := p.evolvers[aggregateType]; dup {
		return fmt.Errorf("aggregate type %s already has an evolve: %w", aggregateType, ErrInvalidFunction)
	}
	p.evolvers[aggregateType] = ev
	for _, g := range p.groups {
		for _, f := range g.functions {
			if !f.types[aggregateType] {
				continue
			}
			if err := p.checkEvents(f); err != nil {
				delete(p.evolvers, aggregateType)
				return err
			}
		}
	}
	return nil
}

func (p *Processor) evolver(t string) (Evolver, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev, ok := p.evolvers[t]
	return ev, ok
}

// lookup returns the function (processor, name), ignoring the kind as the
// reference's compensation headers do.
func (p *Processor) lookup(processor, name string) (*function, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.functions[key{processor, name}]
	return f, ok
}

// check verifies what registration could not: every STATE_EVENT function's
// aggregate types have an evolve.
func (p *Processor) check() error {
	for _, g := range p.groups {
		for _, f := range g.functions {
			if f.info.FunctionKind != "STATE_EVENT" {
				continue
			}
			for t := range f.types {
				if _, ok := p.evolvers[t]; !ok {
					return fmt.Errorf("STATE_EVENT function %s.%s reacts to %s, which has no evolve; call RegisterAggregate: %w",
						f.info.ProcessorName, f.info.Name, t, ErrInvalidFunction)
				}
			}
		}
	}
	return nil
}
