package projection

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
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
		p.terminate(m, err)
		return
	}
	if st.Aggregate.Context != aggregate.Context || st.Aggregate.Type != aggregate.AggregateType {
		p.ack(m) // not a record; the filter subject should have kept it out
		return
	}
	var done action
	for attempt := range casAttempts {
		done, err = p.project(ctx, &st, attempt > 0)
		if !errors.Is(err, errLostRace) {
			break
		}
	}
	switch {
	case err == nil:
		[...]*atomic.Uint64{skip: &p.skipped, evolve: &p.projected, rebuild: &p.rebuilt}[done].Add(1)
		if done != skip {
			p.countEvents(&st)
		}
		p.ack(m)
	case errors.Is(err, aggregate.ErrIllegalArgument):
		p.terminate(m, err) // an event that does not decode, and no carried state
	default:
		p.failed.Add(1)
		p.opts.logger.Warn("projector: view not written; redelivering", "seq", st.Seq, "record", st.Aggregate.ID, "version", st.Version, "err", err)
		if err := m.NakWithDelay(p.opts.nakDelay); err != nil {
			p.opts.logger.Debug("projector: nak", "seq", st.Seq, "err", err)
		}
	}
}

func (p *Projector) ack(m jetstream.Msg) {
	if err := m.Ack(); err != nil {
		p.opts.logger.Debug("projector: ack", "subject", m.Subject(), "err", err)
	}
}

func (p *Projector) terminate(m jetstream.Msg, cause error) {
	p.corrupt.Add(1)
	var seq uint64
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	p.opts.logger.Error("projector: message cannot be projected; terminated", "seq", seq, "subject", m.Subject(), "err", cause)
	if err := m.Term(); err != nil {
		p.opts.logger.Debug("projector: term", "seq", seq, "err", err)
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
	key, err := EncodeKey(st.Aggregate.ID)
	if err != nil {
		return 0, err
	}
	stored, rev, err := p.read(ctx, key, st.Version, reread)
	if err != nil {
		return 0, err
	}
	var next View
	todo := plan(stored, st)
	switch todo {
	case skip:
		return skip, nil
	case evolve:
		if next, err = evolveView(stored, st); err != nil {
			v, ok := carriedView(st)
			if !ok {
				return 0, err
			}
			next = v
		}
	case rebuild:
		if next, err = p.rebuild(ctx, st); err != nil {
			return 0, err
		}
		if stored != nil && next.Version <= stored.Version {
			return skip, nil
		}
	}
	return todo, p.write(ctx, key, rev, &next)
}

// read returns the stored view of key and its revision (nil and 0 if there
// is none), from the cache when allowed.
func (p *Projector) read(ctx context.Context, key string, version uint64, reread bool) (*View, uint64, error) {
	if reread {
		p.cache.drop(key)
	} else if c, ok := p.cache.get(key); ok {
		return &c.view, c.rev, nil
	} else if version == 1 {
		return nil, 0, nil // a first stream: create; a lost race rereads
	}
	e, err := p.views.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("read view %s: %w", key, err)
	}
	v, err := decodeView(e.Value())
	if err != nil {
		return nil, e.Revision(), nil // a corrupt view is rebuilt
	}
	return &v, e.Revision(), nil
}

// rebuild returns the view after st from the state st carries or, if it
// carries none, from the record's history in the event store.
func (p *Projector) rebuild(ctx context.Context, st *eventstore.Stream) (View, error) {
	if v, ok := carriedView(st); ok {
		return v, nil
	}
	streams, err := p.store.Load(ctx, st.Aggregate, 1)
	if err != nil {
		return View{}, fmt.Errorf("load the history of record %s: %w", st.Aggregate.ID, err)
	}
	return replayView(st.Aggregate.ID, streams)
}

// write stores v at key if the key is still at revision rev (0: absent).
func (p *Projector) write(ctx context.Context, key string, rev uint64, v *View) error {
	data, err := encodeView(v)
	if err != nil {
		return fmt.Errorf("encode view %s: %w", key, err)
	}
	var next uint64
	if rev == 0 {
		next, err = p.views.Create(ctx, key, data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return errLostRace
		}
	} else {
		next, err = p.views.Update(ctx, key, data, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return errLostRace
		}
	}
	if err != nil {
		p.cache.drop(key)
		return fmt.Errorf("write view %s version %d: %w", key, v.Version, err)
	}
	p.cache.put(key, next, *v)
	return nil
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
