package bench

import (
	"context"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// rig is a service of the bench context with its recorder and the record
// service, whose recorder tells waiters when a record reaches an outcome.
type rig struct {
	store   *jsstore.Store
	records *aggregate.Service
	rec     *signals
	close   func()
}

func newRig(ctx context.Context, env *Env, name string) (*rig, error) {
	st, closeFn, err := newStore(ctx, env, name, benchContext, aggregate.Context)
	if err != nil {
		return nil, err
	}
	records := aggregate.NewService(st)
	rec, err := recorder.New(records)
	if err != nil {
		closeFn()
		return nil, err
	}
	return &rig{store: st, records: records, rec: &signals{FailureRecorder: rec}, close: closeFn}, nil
}

// signals wraps a recorder: after each recording it wakes the waiter of
// that record and outcome.
type signals struct {
	processor.FailureRecorder
	mu      sync.Mutex
	waiters map[string]*signal
}

// signal is closed when its event happened, at the time it notes.
type signal struct {
	done chan struct{}
	at   time.Time
}

// Record implements processor.FailureRecorder.
func (s *signals) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	o, err := s.FailureRecorder.Record(ctx, x)
	if err == nil && x.Function != nil {
		key := string(o) + "/" + aggregate.RecordID(x.EventID.ID, *x.Function)
		if x.Compensation != nil && x.Err == nil {
			key = "SUCCEEDED/" + x.Compensation.ID
		}
		s.fire(key)
	}
	return o, err
}

func (s *signals) fire(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig, ok := s.waiters[key]; ok {
		sig.at = time.Now()
		close(sig.done)
		delete(s.waiters, key)
	}
}

// expect returns a signal of record id reaching what: "RECORDED" (a first
// failure recorded) or "SUCCEEDED" (a replay succeeded).
func (s *signals) expect(what, id string) *signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters == nil {
		s.waiters = map[string]*signal{}
	}
	sig := &signal{done: make(chan struct{})}
	s.waiters[what+"/"+id] = sig
	return sig
}

// wait returns once sig is done, or with ctx's error when ctx ends first.
func (sig *signal) wait(ctx context.Context) error {
	select {
	case <-sig.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
