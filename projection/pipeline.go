package projection

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/quarantine"
)

// Pipelined writes. A worker takes what has queued up in its lane (up to
// laneBatch messages), groups it by record, brings each record's view in
// memory through the group's streams in order, and publishes the group's
// last view to the bucket asynchronously, as a compare-and-set on the
// revision it started from; the writes of all groups are in flight
// together. Only then, as each write is acknowledged by the server, are
// the group's messages settled: so no message is acked before its effect
// is stored. A write that fails (another writer changed the view, the
// bucket refused it, no answer within pipeTimeout) sends its group's
// messages one by one through the synchronous path (handleStream), which
// rereads the view and is the reference behaviour; it also takes every
// case the pipeline does not (a view that would not read back, a read that
// failed).

// laneBatch bounds the messages of one lane handled as one batch.
const laneBatch = 256

// pipeTimeout bounds the wait for the acknowledgements of one batch's
// writes; a write unacknowledged by then goes the synchronous path, which
// finds out whether it was stored.
const pipeTimeout = 10 * time.Second

// batchGroup is the messages of one record within a batch, in delivery order.
type batchGroup struct {
	id      string // the record's
	key     string // where next is written
	msgs    []jetstream.Msg
	streams []eventstore.Stream
	done    []action
	errs    []error
	next    api.View // the view after the group's last stream that changed it
	write   bool     // next is to be written
	fut     jetstream.PubAckFuture
	sync    bool // handle the messages one by one instead
}

// handleBatch projects one lane's batch (see the pipelined writes above)
// and settles each of its messages.
func (p *Projector) handleBatch(ctx context.Context, msgs []jetstream.Msg) {
	if p.putPrefix == "" {
		for _, m := range msgs {
			p.handle(ctx, m)
		}
		return
	}
	groups := p.group(ctx, msgs)
	for _, g := range groups {
		p.start(ctx, g)
	}
	deadline := time.NewTimer(pipeTimeout)
	defer deadline.Stop()
	expired := false
	for _, g := range groups {
		expired = p.finish(ctx, g, deadline.C, expired)
	}
}

// group decodes msgs and groups them by record; a message that is not a
// record's stream is settled at once, as handle would.
func (p *Projector) group(ctx context.Context, msgs []jetstream.Msg) []*batchGroup {
	groups := make([]*batchGroup, 0, len(msgs))
	byKey := make(map[string]*batchGroup, len(msgs))
	for _, m := range msgs {
		st, err := p.store.DecodeMsg(m)
		if err != nil {
			p.quarantine(ctx, m, quarantine.ReasonUndecodable, err)
			continue
		}
		if st.Aggregate.Context != aggregate.Context || st.Aggregate.Type != aggregate.AggregateType {
			p.ack(m)
			continue
		}
		id := st.Aggregate.ID
		if err := CheckID(id); err != nil {
			p.settle(ctx, m, &st, skip, err)
			continue
		}
		g := byKey[id]
		if g == nil {
			g = &batchGroup{id: id}
			byKey[id] = g
			groups = append(groups, g)
		}
		g.msgs = append(g.msgs, m)
		g.streams = append(g.streams, st)
	}
	return groups
}

// start brings g's view through its streams in memory and publishes it.
func (p *Projector) start(ctx context.Context, g *batchGroup) {
	stored, at, bad, err := p.read(ctx, g.id, g.streams[0].Version, false)
	if err != nil || bad || at.gone || stored != nil && stored.Version > g.streams[0].Version && !p.cache.has(g.id, at.rev) || restarted(stored, &g.streams[0]) {
		// The synchronous path replaces a bad view, checks one past the
		// streams, one of a removed history (restarted), and writes
		// over a deletion.
		g.sync = true
		return
	}
	g.done = make([]action, len(g.streams))
	g.errs = make([]error, len(g.streams))
	cur := stored
	for i := range g.streams {
		next, todo, err := p.advance(ctx, cur, &g.streams[i])
		g.done[i], g.errs[i] = todo, err
		if err == nil && todo != skip {
			g.next, g.write = next, true
			cur = &g.next
		}
	}
	if !g.write {
		return
	}
	data, err := encodeView(&g.next)
	if g.key, _ = ViewKey(g.next.State.Function.ProcessorName, g.id); err != nil || g.key == "" || at.key != "" && at.key != g.key {
		// The synchronous path finds the stream whose view does not read
		// back, and moves a view to its new processor's key.
		g.sync = true
		return
	}
	cas := jetstream.WithExpectLastSequencePerSubject(at.rev)
	if at.key == "" {
		// None known: the record must have no change at any key (write).
		p.announce(ctx, g.next.State.Function.ProcessorName)
		cas = recordCAS(p.putPrefix, g.id, 0)
	}
	m := &nats.Msg{Subject: p.putPrefix + g.key, Header: nats.Header{}, Data: data}
	if g.fut, err = p.js.PublishMsgAsync(m, cas); err != nil {
		p.opts.logger.Debug("projector: pipelined write not sent", "key", g.key, "err", err)
		g.sync = true
	}
}

// finish waits for g's write, until expire fires (expired: it has fired
// already), then settles g's messages; it reports whether expire fired.
func (p *Projector) finish(ctx context.Context, g *batchGroup, expire <-chan time.Time, expired bool) bool {
	if g.fut != nil && !g.sync {
		var pa *jetstream.PubAck
		var err error
		pa, expired, err = awaitAck(ctx, g.fut, expire, expired)
		if err != nil {
			p.opts.logger.Debug("projector: pipelined write not acknowledged; projecting its messages one by one", "key", g.key, "err", err)
			g.sync = true
		} else {
			p.cache.put(g.id, place{key: g.key, rev: pa.Sequence}, g.next)
		}
	}
	if g.sync {
		p.cache.drop(g.id)
		for i, m := range g.msgs {
			p.handleStream(ctx, m, &g.streams[i])
		}
		return expired
	}
	for i, m := range g.msgs {
		p.settle(ctx, m, &g.streams[i], g.done[i], g.errs[i])
	}
	return expired
}

var errNoPubAck = errors.New("no acknowledgement within the pipeline's timeout")

// awaitAck waits for fut's acknowledgement until expire fires or ctx ends;
// once expired, it takes only an answer already there.
func awaitAck(ctx context.Context, fut jetstream.PubAckFuture, expire <-chan time.Time, expired bool) (*jetstream.PubAck, bool, error) {
	if expired {
		select {
		case pa := <-fut.Ok():
			return pa, true, nil
		case err := <-fut.Err():
			return nil, true, err
		default:
			return nil, true, errNoPubAck
		}
	}
	select {
	case pa := <-fut.Ok():
		return pa, false, nil
	case err := <-fut.Err():
		return nil, false, err
	case <-expire:
		return nil, true, errNoPubAck
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// pipelinePrefix returns the subject prefix of the views bucket's keys
// for pipelined writes, or "" if every write must go through the
// KeyValue: it is not the client's own implementation (a wrapper may act
// on writes), the bucket is a mirror or does not take its keys' subjects,
// JetStream is reached through an API prefix or a domain, or the bucket's
// status cannot be read.
func (p *Projector) pipelinePrefix(ctx context.Context) string {
	t := reflect.TypeOf(p.views.KeyValue)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().PkgPath() != "github.com/nats-io/nats.go/jetstream" || t.Elem().Name() != "kvs" {
		return ""
	}
	if o := p.js.Options(); o.Domain != "" || o.APIPrefix != "" && o.APIPrefix != jetstream.DefaultAPIPrefix {
		return ""
	}
	st, err := p.views.Status(ctx)
	if err != nil {
		p.opts.logger.Debug("projector: views bucket status; writing synchronously", "err", err)
		return ""
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return ""
	}
	prefix := "$KV." + p.views.Bucket() + "."
	cfg := bs.StreamInfo().Config
	if cfg.Mirror != nil || !slices.Contains(cfg.Subjects, prefix+">") {
		return ""
	}
	return prefix
}
