package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// releaseTimeout bounds releasing the lease when Run stops.
const releaseTimeout = 5 * time.Second

// lead runs the election until ctx ends: try to acquire the lease every
// renewal interval and whenever the key is deleted or expires; while held,
// renew it every interval and step down when it is lost or its validity
// ends without a renewal.
func (s *Scheduler) lead(ctx context.Context) {
	l := &lease{kv: s.leases.leases, key: s.opts.key, holder: s.opts.instance, ttl: s.leases.ttl, margin: s.opts.margin, clock: s.opts.leaseClock}
	freed := s.watchFreed(ctx)
	if freed != nil {
		defer freed.Stop()
	}
	renew := time.NewTicker(s.opts.renewEvery)
	defer renew.Stop()
	t := &tenure{s: s, l: l, expiry: time.NewTimer(time.Hour)}
	t.expiry.Stop()
	t.try(ctx)
	for {
		select {
		case <-ctx.Done():
			t.stepDown("stopping", nil)
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			if err := l.release(rctx); err != nil {
				s.opts.logger.Debug("scheduler: release", "err", err)
			}
			rcancel()
			return
		case e, ok := <-updates(freed):
			if !ok {
				freed = nil // the renewal interval's retries take over
				continue
			}
			if t.cancel == nil && e != nil && e.Operation() != jetstream.KeyValuePut {
				t.try(ctx) // deleted or expired: take over now
			}
		case <-renew.C:
			t.renew(ctx)
		case <-t.expiry.C:
			if t.cancel != nil && !l.held(s.opts.leaseClock.Now()) {
				t.stepDown("lease not renewed in time", nil)
			}
		}
	}
}

// tenure is this instance's hold of the lease, if any (cancel is nil
// without): it takes the lease, renews it and steps down.
type tenure struct {
	s      *Scheduler
	l      *lease
	expiry *time.Timer // when the lease held may have expired
	cancel context.CancelFunc
}

// try takes the lease if it is free, and becomes active with it.
func (t *tenure) try(ctx context.Context) {
	s := t.s
	ok, err := t.l.acquire(ctx)
	if err != nil && ctx.Err() == nil {
		s.opts.logger.Warn("scheduler: cannot reach the lease", "err", err)
	}
	if !ok {
		return
	}
	var active context.Context
	active, t.cancel = context.WithCancel(ctx)
	s.acquired.Add(1) // counted before it shows: Stats never says active with none acquired
	s.mu.Lock()
	s.active, s.since = active, s.opts.leaseClock.Now()
	s.mu.Unlock()
	t.extend()
	s.opts.logger.Info("scheduler: active", "instance", s.opts.instance)
}

// renew renews the lease held, or tries to take it when none is.
func (t *tenure) renew(ctx context.Context) {
	if t.cancel == nil {
		t.try(ctx)
		return
	}
	err := t.l.renew(ctx)
	switch {
	case errors.Is(err, errLost):
		t.stepDown("lease lost", err)
	case err != nil:
		t.s.opts.logger.Warn("scheduler: lease not renewed; still valid", "until", t.l.validUntil, "err", err)
	default:
		t.extend()
	}
}

// extend moves the deadline of the active tenure to the lease's validity.
func (t *tenure) extend() {
	s := t.s
	s.mu.Lock()
	s.deadline = t.l.validUntil
	s.mu.Unlock()
	t.expiry.Reset(t.l.validUntil.Sub(s.opts.leaseClock.Now()))
}

// stepDown ends the active tenure, if any, for why.
func (t *tenure) stepDown(why string, err error) {
	if t.cancel == nil {
		return
	}
	s := t.s
	t.cancel()
	t.cancel = nil
	s.lost.Add(1)
	s.mu.Lock()
	s.active = nil
	s.mu.Unlock()
	if err == nil && why == "stopping" {
		s.opts.logger.Info("scheduler: stepped down", "instance", s.opts.instance, "reason", why) // a clean stop
		return
	}
	s.opts.logger.Warn("scheduler: stepped down", "instance", s.opts.instance, "reason", why, "err", err)
}

// watchFreed watches the lease key for deletion and expiry. It returns nil
// if the watch cannot start; the renewal interval's retries then take over.
func (s *Scheduler) watchFreed(ctx context.Context) jetstream.KeyWatcher {
	w, err := s.leases.leases.KV().Watch(ctx, s.opts.key, jetstream.UpdatesOnly(), jetstream.MetaOnly())
	if err != nil {
		s.opts.logger.Warn("scheduler: cannot watch the lease", "err", err)
		return nil
	}
	return w
}

// updates returns w's updates, or nil (never ready) without a watch.
func updates(w jetstream.KeyWatcher) <-chan jetstream.KeyValueEntry {
	if w == nil {
		return nil
	}
	return w.Updates()
}
