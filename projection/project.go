package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// casAttempts bounds how often one message is projected again after
// another projector changed the view between our read and our write.
const casAttempts = 8

// errLostRace: the view changed between the read and the compare-and-set.
var errLostRace = errors.New("view changed concurrently")

// handle projects one message and acknowledges it (see Projector).
func (p *Projector) handle(ctx context.Context, m jetstream.Msg) {
	st, err := p.store.DecodeMsg(m)
	if err != nil {
		p.quarantine(ctx, m, quarantine.ReasonUndecodable, err)
		return
	}
	if st.Aggregate.Context != aggregate.Context || st.Aggregate.Type != aggregate.AggregateType {
		p.ack(m) // not a record; the filter subject should have kept it out
		return
	}
	p.handleStream(ctx, m, &st)
}

// handleStream projects m's decoded stream st with a write of its own,
// and settles m.
func (p *Projector) handleStream(ctx context.Context, m jetstream.Msg, st *eventstore.Stream) {
	var done action
	var err error
	for attempt := range casAttempts {
		done, err = p.project(ctx, st, attempt > 0)
		if !errors.Is(err, errLostRace) {
			break
		}
	}
	p.settle(ctx, m, st, done, err)
}

// settle acknowledges m, whose stream st was handled with done, once its
// effect is stored (err nil); otherwise it quarantines m (an error that
// can never go away) or hands it back for redelivery.
func (p *Projector) settle(ctx context.Context, m jetstream.Msg, st *eventstore.Stream, done action, err error) {
	if err == nil {
		[...]*atomic.Uint64{skip: &p.skipped, evolve: &p.projected, rebuild: &p.rebuilt}[done].Add(1)
		if done != skip {
			p.countEvents(st)
		}
		p.ack(m)
		return
	}
	if reason, ok := terminal(err); ok {
		p.quarantine(ctx, m, reason, err)
		return
	}
	p.retry(ctx, m, st, err)
}

// terminal classifies an error of project: the reason a message can never
// be projected, or false if the error may be transient (the bucket or the
// store unavailable, a timeout, a lost race every time).
func terminal(err error) (quarantine.Reason, bool) {
	switch {
	case errors.Is(err, aggregate.ErrIllegalArgument):
		return quarantine.ReasonUndecodable, true // an event that does not decode, and no carried state
	case errors.Is(err, ErrCorruptView):
		return quarantine.ReasonInvalidView, true // a view the reader would reject
	case errors.Is(err, eventstore.ErrCorrupt), errors.Is(err, eventstore.ErrInvalid), errors.Is(err, ErrInvalidQuery):
		return quarantine.ReasonCorrupt, true // a history that does not load, an id that cannot be a key
	}
	return "", false
}

// retry hands m back for redelivery after a delay growing with its
// deliveries, or quarantines it once they are exhausted.
func (p *Projector) retry(ctx context.Context, m jetstream.Msg, st *eventstore.Stream, cause error) {
	if ctx.Err() != nil {
		p.nak(m, 0) // stopping: not the message's fault
		return
	}
	delivered := deliveries(m)
	if p.opts.retry.Exhausted(delivered) {
		p.quarantine(ctx, m, quarantine.ReasonRetriesExhausted, cause)
		return
	}
	p.failed.Add(1)
	level := slog.LevelDebug
	if delivered <= 1 {
		level = slog.LevelWarn
	}
	p.opts.logger.Log(ctx, level, "projector: view not written; redelivering", "seq", st.Seq, "record", st.Aggregate.ID,
		"version", st.Version, "deliveries", delivered, "err", cause)
	p.nak(m, p.delay(delivered))
}

// delay is the wait before redelivering a message delivered n times.
func (p *Projector) delay(n uint64) time.Duration {
	if p.opts.nakDelay == 0 && p.opts.retry.First == 0 {
		return 0
	}
	return p.opts.retry.Delay(n)
}

func deliveries(m jetstream.Msg) uint64 {
	if md, err := m.Metadata(); err == nil {
		return md.NumDelivered
	}
	return 1
}

func (p *Projector) ack(m jetstream.Msg) {
	if err := m.Ack(); err != nil {
		p.opts.logger.Debug("projector: ack", "subject", m.Subject(), "err", err)
	}
}

func (p *Projector) nak(m jetstream.Msg, delay time.Duration) {
	if err := m.NakWithDelay(delay); err != nil {
		p.opts.logger.Debug("projector: nak", "subject", m.Subject(), "err", err)
	}
}

// quarantine records m in the quarantine and terminates it. If it cannot
// be recorded, m is redelivered later, so that nothing is terminated
// without a trace, until its deliveries are exhausted: then it is
// terminated with only a log line as its trace.
func (p *Projector) quarantine(ctx context.Context, m jetstream.Msg, reason quarantine.Reason, cause error) {
	if err := p.opts.quarantine.Record(ctx, m, p.opts.durable, reason, cause); err != nil {
		if n := deliveries(m); ctx.Err() != nil || !p.opts.retry.Exhausted(n) {
			p.failed.Add(1)
			p.opts.logger.Warn("projector: cannot quarantine a message; redelivering", "subject", m.Subject(), "reason", string(reason), "cause", cause, "err", err)
			p.nak(m, p.delay(n))
			return
		}
		p.opts.logger.Error("projector: message terminated; the quarantine could not record it", "subject", m.Subject(), "reason", string(reason), "cause", cause, "err", err)
	}
	p.corrupt.Add(1)
	if err := m.Term(); err != nil {
		p.opts.logger.Debug("projector: term", "subject", m.Subject(), "err", err)
	}
}

// project brings the view of st's record to st's version, or leaves it if
// it is already there, and says which it did. It returns errLostRace if
// another writer changed the view since it was read.
//
// It reads the stored view from the cache of its own writes, assumes none
// for a record's first stream, and reads the bucket otherwise or when
// reread is set (after a lost race).
func (p *Projector) project(ctx context.Context, st *eventstore.Stream, reread bool) (action, error) {
	id := st.Aggregate.ID
	if err := CheckID(id); err != nil {
		return 0, err
	}
	stored, at, bad, err := p.read(ctx, id, st.Version, reread)
	if err != nil {
		return 0, err
	}
	if !bad && restarted(stored, st) {
		return rebuild, p.restart(ctx, at, st)
	}
	if !bad && stored != nil && stored.Version > st.Version && !p.cache.has(id, at.rev) {
		// A view read from the bucket past this stream: a redelivery, or a
		// view written ahead of its record (which would never be updated
		// again). One read of the record's last version tells.
		last, err := p.store.LastVersion(ctx, st.Aggregate)
		if err != nil {
			return 0, fmt.Errorf("read the last version of record %s: %w", id, err)
		}
		if stored.Version > last {
			p.bucket.Report(ctx, at.key, at.rev, "version", fmt.Sprintf("%d is ahead of the record's last version %d; the view is projected again from the history", stored.Version, last))
			bad = true
		}
	}
	if bad {
		// A stored view that does not validate, or is ahead of its record:
		// replaced by the record's whole history, not only up to st (st may
		// be a redelivery, and the streams after it acknowledged long ago).
		next, err := p.rebuildLatest(ctx, st)
		if err != nil {
			return 0, err
		}
		return rebuild, p.write(ctx, id, at, &next)
	}
	next, todo, err := p.advance(ctx, stored, st)
	if err != nil || todo == skip {
		return todo, err
	}
	return todo, p.write(ctx, id, at, &next)
}

// advance returns the view after st given the stored view (nil if there
// is none), and which action made it; skip (and no view) if the stored
// view is already at or past st. It writes nothing.
func (p *Projector) advance(ctx context.Context, stored *api.View, st *eventstore.Stream) (api.View, action, error) {
	var next api.View
	var err error
	todo := plan(stored, st)
	switch todo {
	case skip:
		return api.View{}, skip, nil
	case evolve:
		if next, err = evolveView(stored, st); err != nil {
			v, ok := carriedView(st)
			if !ok {
				return api.View{}, 0, err
			}
			next = v
		}
	case rebuild:
		if next, err = p.rebuild(ctx, st); err != nil {
			return api.View{}, 0, err
		}
		if stored != nil && next.Version <= stored.Version {
			return api.View{}, skip, nil
		}
	}
	return next, todo, nil
}

// read returns the stored view of record id and where it is (nil and
// the zero place for none), from the cache when allowed. A record's
// first stream (version 1) is not read: its write is a create that fails
// on a key with any change, and the reread that follows finds it. bad
// reports a stored value that does not validate (decodeView and
// checkView; reported to the quarantine): it is rebuilt.
func (p *Projector) read(ctx context.Context, id string, version uint64, reread bool) (v *api.View, at place, bad bool, err error) {
	if reread {
		p.cache.drop(id)
	} else if c, ok := p.cache.get(id); ok {
		return &c.view, c.at, false, nil
	} else if version == 1 {
		return nil, place{}, false, nil
	}
	v, at, why, err := p.lookup(ctx, id)
	if why != nil {
		p.bucket.ReportErr(ctx, at.key, at.rev, why)
		return nil, at, true, nil
	}
	return v, at, false, err
}

// lookup reads the stored view of record id from the bucket, and where it
// is (the zero place: the record has no key). why is the refusal of a
// stored value that is no valid view (storedView).
func (p *Projector) lookup(ctx context.Context, id string) (v *api.View, at place, why, err error) {
	e, err := p.views.Lookup(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, place{}, nil, nil
	case err != nil:
		return nil, place{}, nil, fmt.Errorf("read the view of record %s: %w", id, err)
	}
	at = place{key: e.Key(), rev: e.Revision(), gone: e.Operation() != jetstream.KeyValuePut}
	if at.gone {
		return nil, at, nil, nil
	}
	view, why := storedView(at.key, e.Value())
	if why != nil {
		return nil, at, why, nil
	}
	return &view, at, nil, nil
}

// rebuild returns the view after st from the state st carries or, if it
// carries none, from the record's history in the event store as of st:
// neither a replica that has not applied st yet nor later streams change
// what st's view is.
func (p *Projector) rebuild(ctx context.Context, st *eventstore.Stream) (api.View, error) {
	if v, ok := carriedView(st); ok {
		return v, nil
	}
	var streams []eventstore.Stream
	var err error
	if st.Seq != 0 {
		streams, err = p.store.LoadAt(ctx, st.Aggregate, 1, st.Seq)
	} else {
		streams, err = p.store.Load(ctx, st.Aggregate, 1)
	}
	if err != nil {
		return api.View{}, fmt.Errorf("load the history of record %s: %w", st.Aggregate.ID, err)
	}
	return replayView(st.Aggregate.ID, streams)
}

// write stores v, the view of record id, at its key (ViewKey of its
// processor) if the record's view is still where at says:
//   - at its key: a compare-and-set on at's revision of the key;
//   - anywhere else (none, a deletion, or another processor's key): a
//     compare-and-set on the last change of every key of the record
//     (putRecord), so that two writers that disagree on where the view is
//     never both write. A view at another processor's key is deleted
//     there first, so the last change of the record's keys is always its
//     current view.
//
// A write that loses a race is errLostRace: the caller reads again.
func (p *Projector) write(ctx context.Context, id string, at place, v *api.View) error {
	data, err := encodeView(v) // checks that it has a key
	if err != nil {
		return fmt.Errorf("encode the view of record %s: %w", id, err)
	}
	key, err := ViewKey(v.State.Function.ProcessorName, id)
	if err != nil {
		return fmt.Errorf("the view of record %s: %w", id, err)
	}
	var next uint64
	if at.key == key && !at.gone {
		next, err = p.views.Update(ctx, key, data, at.rev)
	} else {
		rev := at.rev
		if at.key != "" && !at.gone {
			p.cache.drop(id)
			if rev, err = p.putRecord(ctx, id, at.key, nil, rev); err != nil {
				if kvstore.IsConflict(err) {
					return errLostRace
				}
				return fmt.Errorf("move the view of record %s from key %s: %w", id, at.key, err)
			}
		}
		p.announce(ctx, v.State.Function.ProcessorName)
		next, err = p.putRecord(ctx, id, key, data, rev)
	}
	if kvstore.IsConflict(err) {
		p.cache.drop(id)
		return errLostRace
	}
	if err != nil {
		p.cache.drop(id)
		return fmt.Errorf("write view %s version %d: %w", key, v.Version, err)
	}
	p.cache.put(id, place{key: key, rev: next}, *v)
	return nil
}

// putRecord writes data at key (nil: the key's deletion) if the last
// change of record id's keys is at revision rev (0: it has none), and
// returns the write's revision. A lost compare-and-set is an error
// kvstore.IsConflict reports.
func (p *Projector) putRecord(ctx context.Context, id, key string, data []byte, rev uint64) (uint64, error) {
	prefix := "$KV." + p.views.Bucket() + "."
	m := &nats.Msg{Subject: prefix + key, Header: nats.Header{}, Data: data}
	if data == nil {
		m.Header.Set(kvwatch.OperationHeader, kvwatch.OperationDelete)
	}
	ack, err := p.js.PublishMsg(ctx, m, recordCAS(prefix, id, rev))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// recordCAS is the expectation that the last change of record id's keys
// (in the bucket of subject prefix) is at revision rev.
func recordCAS(prefix, id string, rev uint64) jetstream.PublishOpt {
	return jetstream.WithExpectLastSequenceForSubject(rev, prefix+recordPattern(id))
}

// maxAnnounced bounds the processors a projector remembers it wrote the
// key of (ProcessorKey); past it, it forgets them all and writes them
// again as they come.
const maxAnnounced = 4096

// announce writes the key that says processor has views (ProcessorKey),
// once per processor and projector: an instance that watches only its
// partitions learns of a processor no partition holds from it
// (ProcessorKey). A failed
// write is logged and tried again with the processor's next new view.
func (p *Projector) announce(ctx context.Context, processor string) {
	p.announcedMu.Lock()
	done := p.announced[processor]
	p.announcedMu.Unlock()
	if done {
		return
	}
	key, err := ProcessorKey(processor)
	if err != nil {
		return
	}
	if _, err := p.views.Create(ctx, key, nil); err != nil && !errors.Is(err, jetstream.ErrKeyExists) && !kvstore.IsConflict(err) {
		p.opts.logger.Debug("projector: cannot write the key of a processor", "processor", processor, "err", err)
		return
	}
	p.announcedMu.Lock()
	defer p.announcedMu.Unlock()
	if len(p.announced) >= maxAnnounced {
		clear(p.announced)
	}
	p.announced[processor] = true
}

// countEvents counts the events of a stream projected for the first time
// by this projector, by name.
func (p *Projector) countEvents(st *eventstore.Stream) {
	for _, e := range st.Events {
		for i, name := range aggregate.EventNames {
			if e.Name == name {
				p.events[i].Add(1)
			}
		}
	}
}

// restart replaces the stored view (where at says) of a record whose
// history was removed (retention) and that started again: it deletes the
// view, so that the index, which keeps a record's highest version, drops
// the removed one, then creates the view of the new history. A delete or
// create that loses a race is errLostRace: the caller reads again.
func (p *Projector) restart(ctx context.Context, at place, st *eventstore.Stream) error {
	id := st.Aggregate.ID
	p.cache.drop(id)
	deleted, err := p.putRecord(ctx, id, at.key, nil, at.rev)
	if err != nil {
		if kvstore.IsConflict(err) {
			return errLostRace
		}
		return fmt.Errorf("delete the view of record %s's removed history: %w", id, err)
	}
	next, err := p.rebuildLatest(ctx, st)
	if err != nil {
		return err
	}
	return p.write(ctx, id, place{key: at.key, rev: deleted, gone: true}, &next)
}

// restarted reports whether st was appended after the stored view's stream
// (a higher sequence) but is not a later version: the record's history was
// removed (retention, jsstore.Store.Remove) and it was created again. A
// redelivery has a lower sequence.
func restarted(stored *api.View, st *eventstore.Stream) bool {
	return stored != nil && st.Seq != 0 && stored.Seq != 0 && st.Seq > stored.Seq && st.Version <= stored.Version
}
