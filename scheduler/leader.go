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
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	var cancel context.CancelFunc
	stepDown := func(why string, err error) {
		if cancel == nil {
			return
		}
		cancel()
		cancel = nil
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
	extend := func() {
		s.mu.Lock()
		s.deadline = l.validUntil
		s.mu.Unlock()
		expiry.Reset(l.validUntil.Sub(s.opts.leaseClock.Now()))
	}
	try := func() {
		ok, err := l.acquire(ctx)
		if err != nil && ctx.Err() == nil {
			s.opts.logger.Warn("scheduler: cannot reach the lease", "err", err)
		}
		if !ok {
			return
		}
		var active context.Context
		active, cancel = context.WithCancel(ctx)
		s.mu.Lock()
		s.active, s.since = active, s.opts.leaseClock.Now()
		s.mu.Unlock()
		extend()
		s.acquired.Add(1)
		s.opts.logger.Info("scheduler: active", "instance", s.opts.instance)
	}
	try()
	for {
		select {
		case <-ctx.Done():
			stepDown("stopping", nil)
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
			if cancel == nil && e != nil && e.Operation() != jetstream.KeyValuePut {
				try() // deleted or expired: take over now
			}
		case <-renew.C:
			if cancel == nil {
				try()
				continue
			}
			err := l.renew(ctx)
			switch {
			case errors.Is(err, errLost):
				stepDown("lease lost", err)
			case err != nil:
				s.opts.logger.Warn("scheduler: lease not renewed; still valid", "until", l.validUntil, "err", err)
			default:
				extend()
			}
		case <-expiry.C:
			if cancel != nil && !l.held(s.opts.leaseClock.Now()) {
				stepDown("lease not renewed in time", nil)
			}
		}
	}
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
