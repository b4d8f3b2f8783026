package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/kvstore"
)

// checkAheadOfKey is checkAhead for progress key, whose aggregate its key
// names, after version was dispatched.
func (p *Processor) checkAheadOfKey(ctx context.Context, pr *progress, key string, e *progressEntry, version uint64) error {
	k, err := parseHoldKey(key)
	if err != nil {
		return err
	}
	st := &eventstore.Stream{Aggregate: eventstore.AggregateID{Context: k.context, Type: k.aggregateType, ID: k.aggregateID}, Version: version}
	return p.checkAhead(ctx, pr, key, e, st)
}

// checkAhead checks, once per progress read from the bucket, that a
// progress past st's version is not past the aggregate's last version:
// such a progress is reported (quarantined) and an error, so the
// aggregate's events are held, never skipped as done.
func (p *Processor) checkAhead(ctx context.Context, pr *progress, key string, e *progressEntry, st *eventstore.Stream) error {
	if e.checked || e.version == st.Version {
		return nil
	}
	last, err := p.store.LastVersion(ctx, st.Aggregate)
	if err != nil {
		return fmt.Errorf("read the last version of %s to check progress %s: %w", st.Aggregate, key, err)
	}
	if e.version > last {
		return pr.store.Report(ctx, key, e.rev, "version", fmt.Sprintf(
			"%d is ahead of the aggregate's last version %d: the function would never be given the versions after %d; they are held until the progress is written again or removed (amends repair purge-entry)",
			e.version, last, st.Version-1))
	}
	e.checked = true
	pr.remember(key, *e)
	return nil
}

// step is what the progress of one Ordered function says about a message.
type step int

const (
	stepRun   step = iota // the next version: dispatch it
	stepDone              // dispatched before: skip it
	stepEarly             // a version before it is not dispatched yet: redeliver later
)

// check compares version v of a stream (whose previous version is at
// stream sequence prevSeq; 0 for the first) with key's progress. With no
// progress recorded, the first version runs, and a later one only when
// the consumer has acked everything up to its previous version (the
// function was added after it, or the consumer started after it).
func (p *Processor) checkProgress(ctx context.Context, key string, st *eventstore.Stream, prevSeq uint64, floor func() uint64, redelivered bool, appended time.Time) (step, progressEntry, error) {
	pr := p.holds.progress
	// A redelivered message may have been dispatched by another instance
	// since this one cached the key: read it.
	for fresh := redelivered; ; fresh = true {
		e, err := pr.get(ctx, key, fresh)
		if err != nil {
			return stepEarly, e, err
		}
		switch {
		case e.rev == 0 && (st.Version == 1 || floor() >= prevSeq):
			return p.firstProgress(ctx, pr, key, e, redelivered)
		case e.rev != 0 && st.Version <= e.version:
			return p.progressPast(ctx, pr, key, e, st, appended)
		case e.rev != 0 && st.Version == e.version+1:
			return stepRun, e, nil
		}
		if !fresh {
			continue
		}
		if e.rev != 0 && st.Version > e.version+1 && floor() >= prevSeq {
			return progressBehind(ctx, pr, key, e, st)
		}
		return stepEarly, e, nil
	}
}

// firstProgress decides on a progress never written (or erased) where
// the version may run: it runs, unless a redelivered message finds the
// progress deleted or purged, which is reported.
func (p *Processor) firstProgress(ctx context.Context, pr *progress, key string, e progressEntry, redelivered bool) (step, progressEntry, error) {
	if !redelivered {
		return stepRun, e, nil
	}
	// An earlier delivery may have been dispatched: only a progress never
	// written says it was not.
	rev, ok, err := pr.erased(ctx, key)
	if err != nil {
		return stepEarly, e, err
	}
	if ok {
		return stepEarly, e, pr.store.Report(ctx, key, rev, "", "the progress was deleted or purged (amends never removes one), so it no longer says which versions were dispatched")
	}
	return stepRun, e, nil
}

// progressPast decides on a progress at or past st's version: done, since
// progress only grows. Even a cached one is right, unless it was written
// ahead of the aggregate (a hand edit, a bad migration), or before the
// version was appended: then it would skip events never dispatched, and
// is reported.
func (p *Processor) progressPast(ctx context.Context, pr *progress, key string, e progressEntry, st *eventstore.Stream, appended time.Time) (step, progressEntry, error) {
	early := !e.checked && !e.written.IsZero() && !appended.IsZero() && e.written.Before(appended.Add(-p.o.serverSkew))
	if err := p.checkAhead(ctx, pr, key, &e, st); err != nil {
		return stepEarly, e, err
	}
	if early {
		pr.forget(key)
		return stepEarly, e, pr.store.Report(ctx, key, e.rev, "version", fmt.Sprintf(
			"%d was written at %s, before version %d was appended at %s: no instance can have given that version to the function",
			e.version, e.written.UTC().Format(time.RFC3339Nano), st.Version, appended.UTC().Format(time.RFC3339Nano)))
	}
	return stepDone, e, nil
}

// progressBehind decides on a progress behind a previous version the
// consumer acked, and a version is acked only once its progress is
// written. The floor may have been read after e, while another instance
// dispatched that version: read the progress again, after the floor.
// Still behind, it is (a hand edit), and would hold the aggregate's events
// for ever: it is reported.
func progressBehind(ctx context.Context, pr *progress, key string, e progressEntry, st *eventstore.Stream) (step, progressEntry, error) {
	again, err := pr.get(ctx, key, true)
	if err != nil || again.rev != e.rev {
		return stepEarly, again, err
	}
	return stepEarly, e, pr.store.Report(ctx, key, e.rev, "version", fmt.Sprintf(
		"%d is behind: the consumer acked version %d, which is written to the progress before it is acked", e.version, st.Version-1))
}

// orderedMsg is what the Ordered functions of one message share: where
// its aggregate's previous version is, whether it was delivered before,
// and the consumer's ack floor, read at most once.
type orderedMsg struct {
	prevSeq     uint64
	redelivered bool
	appended    time.Time // the message's time in the stream (the server's)
	floor       *uint64
	durable     string
}

func (p *Processor) newOrderedMsg(g *group, st *eventstore.Stream, m jetstream.Msg) *orderedMsg {
	o := &orderedMsg{prevSeq: previousSeq(st), redelivered: true, durable: DurableName(p.context, g.name)}
	if md, err := m.Metadata(); err == nil {
		o.redelivered, o.appended = md.NumDelivered > 1, md.Timestamp
	}
	return o
}

// ackFloor returns the consumer's ack floor (0 if it cannot be read).
func (p *Processor) ackFloor(ctx context.Context, o *orderedMsg) uint64 {
	if o.floor == nil {
		var f uint64
		if c, err := p.js.Consumer(ctx, p.store.StreamName(p.context), o.durable); err == nil {
			if info, err := c.Info(ctx); err == nil {
				f = info.AckFloor.Stream
			}
		}
		o.floor = &f
	}
	return *o.floor
}

// orderedBegin checks f's progress on st's aggregate: run it, skip it
// (done), or redeliver the message (an earlier version is not dispatched
// yet, or the progress cannot be read). A progress that does not validate
// or is ahead of its aggregate is recovered (recoverProgress).
func (p *Processor) orderedBegin(ctx context.Context, f *function, st *eventstore.Stream, o *orderedMsg) (string, progressEntry, step) {
	key := p.holdKey(f, eventIDOf(st, &eventstore.Event{}).AggregateID)
	s, e, err := p.checkProgress(ctx, key, st, o.prevSeq, func() uint64 { return p.ackFloor(ctx, o) }, o.redelivered, o.appended)
	var bad *kvstore.InvalidError
	if errors.As(err, &bad) && bad.Key == key {
		e, s := p.recoverProgress(ctx, f, key, st, o, bad)
		return key, e, s
	}
	if err != nil {
		if !errors.Is(err, kvstore.ErrInvalid) { // an invalid one is logged by the quarantine
			p.o.logger.Warn("amends processor: cannot read the progress of an Ordered function; the message will be redelivered",
				"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key, "err", err)
		}
		return key, e, stepEarly
	}
	return key, e, s
}

// orderedEnd advances f's progress to version after it was dispatched,
// over whatever another writer put there meanwhile; false if the write
// failed (the message is redelivered and f, done, skipped then).
func (p *Processor) orderedEnd(ctx context.Context, f *function, key string, e progressEntry, version uint64) bool {
	pr := p.holds.progress
	held := p.holds.cache.held(key)
	err := pr.advance(ctx, key, e, version, held)
	// Moved meanwhile: the version was given to f all the same, so the
	// progress must say so, whatever another writer put there (the same
	// value again, a lower one, one that does not validate), unless it
	// already says as much. Redelivering instead would give f the version
	// twice.
	for tries := 0; errors.Is(err, errProgressMoved) && tries < 3; tries++ {
		cur, gerr := pr.get(ctx, key, true)
		var bad *kvstore.InvalidError
		switch {
		case gerr == nil && cur.version >= version:
			// Another delivery of it finished first, unless the progress
			// was written ahead of the aggregate: then the message is
			// redelivered and held (checkProgress).
			return p.checkAheadOfKey(ctx, pr, key, &cur, version) == nil
		case gerr == nil:
			err = pr.advance(ctx, key, cur, version, held)
		case errors.As(gerr, &bad) && bad.Key == key:
			err = pr.advance(ctx, key, progressEntry{rev: bad.Revision}, version, held)
		default:
			err = gerr
		}
	}
	if err != nil {
		p.o.logger.Warn("amends processor: cannot record the progress of an Ordered function; the message will be redelivered",
			"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key, "err", err)
		return false
	}
	return true
}

// previousSeq returns the stream sequence of the version before st (the
// store tells it: Stream.PrevSeq), or, for a first version, the sequence
// just before st's: all earlier messages.
func previousSeq(st *eventstore.Stream) uint64 {
	if st.PrevSeq > 0 {
		return st.PrevSeq
	}
	return max(st.Seq, 1) - 1
}

// A progress is the only record of what an Ordered function was given,
// so one that does not validate ("abc", "-1") or is ahead of its
// aggregate cannot say whether the version at hand was dispatched. The
// consumer can, for a message delivered for the first time: no instance
// was given it before, and an ack floor at or past the previous version's
// sequence means every earlier version is done. Then the version runs and
// its progress is written over the bad value (compare-and-set on its
// revision). Otherwise (a redelivery, or earlier versions not acked) the
// version may have been given already: it is held instead, in a recovered
// hold that names the bad value, for an operator to release or skip
// (amends holds), and the progress is written over the bad value as
// dispatched and held. Either way the message is acked, the bad value is
// in the quarantine, and no version is run twice or dropped.

// recoverProgress returns the progress to dispatch st's version over,
// for key's progress that bad refused, after holding the version if it
// may have been given already; stepEarly if the hold cannot be written.
func (p *Processor) recoverProgress(ctx context.Context, f *function, key string, st *eventstore.Stream, o *orderedMsg, bad *kvstore.InvalidError) (progressEntry, step) {
	e := progressEntry{version: st.Version - 1, rev: bad.Revision, checked: true}
	log := p.o.logger.With("context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", kvstore.QuoteKey(key),
		"version", st.Version, "revision", bad.Revision)
	if !o.redelivered && (st.Version == 1 || p.ackFloor(ctx, o) >= o.prevSeq) {
		log.Warn("amends processor: an Ordered function's progress does not validate; the consumer shows every earlier version done and this one never delivered before, so it runs and its progress is written again",
			"err", bad.Reason)
		return e, stepRun
	}
	a := eventIDOf(st, &eventstore.Event{}).AggregateID
	what := bad.Reason
	if bad.Field != "" {
		what = bad.Field + ": " + what
	}
	why := fmt.Sprintf("the progress (revision %d of bucket %s) cannot be used (%s), and version %d was delivered before, so it may have been given to the function already; it is held here: skip it if it was handled, then release",
		bad.Revision, ProgressBucket, what, st.Version)
	now := max(p.o.clock.Now().UnixMilli(), 1)
	h := api.Hold{Context: p.context, Processor: f.info.ProcessorName, Function: f.info.Name, AggregateType: a.AggregateName, AggregateID: a.AggregateID,
		Head: api.HoldHead{Since: now}, Recovered: &api.HoldRecovery{Revision: bad.Revision, Reason: clipText(why, 2000), At: now}}
	rev, err := createHoldRev(ctx, p.holds.kv, h)
	if err != nil {
		log.Warn("amends processor: cannot hold a version whose progress does not validate; the message will be redelivered", "err", err)
		return e, stepEarly
	}
	if rev > 0 {
		p.holds.cache.put(key, h, rev)
	}
	log.Warn("amends processor: an Ordered function's progress does not validate and the version was delivered before; it is held for an operator (amends holds list)",
		"err", bad.Reason)
	e.held = true
	return e, stepRun
}
