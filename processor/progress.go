package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// ProgressBucket is the KV bucket of Ordered functions' progress: per
// (function, aggregate), under the key of its hold (HoldKey), the last
// version dispatched to the function (handled, or become a hold's head,
// or held). A version is dispatched only right after the one before it,
// whatever order redeliveries, restarts or several instances bring the
// messages in: an earlier version is skipped as done, a later one waits.
const ProgressBucket = "amends_progress"

// maxProgressCache bounds the progress entries an instance caches.
const maxProgressCache = 1 << 16

type progressEntry struct {
	version, rev uint64
	// held: a hold existed when version was dispatched (value "<v>h"), so
	// the next version asks the holds bucket even before this instance's
	// watch shows the hold.
	held bool
}

// progress reads and advances the progress of Ordered functions, with a
// cache of the last revision this instance read or wrote, so that an
// aggregate handled here costs one CAS write per version. Safe for
// concurrent use.
type progress struct {
	kv    jetstream.KeyValue
	mu    sync.Mutex
	cache map[string]progressEntry
}

func newProgress(kv jetstream.KeyValue) *progress {
	return &progress{kv: kv, cache: make(map[string]progressEntry)}
}

func progressBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, ProgressBucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("open the progress bucket %s: %w", ProgressBucket, err)
	}
	kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: ProgressBucket, Description: "amends Ordered functions: last version dispatched per (function, aggregate)",
		History: 1, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, ProgressBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("create the progress bucket %s: %w", ProgressBucket, err)
	}
	return kv, nil
}

// get returns key's progress: from the cache, else the bucket (fresh:
// true to skip the cache). rev 0: no progress yet.
func (pr *progress) get(ctx context.Context, key string, fresh bool) (progressEntry, error) {
	if !fresh {
		pr.mu.Lock()
		e, ok := pr.cache[key]
		pr.mu.Unlock()
		if ok {
			return e, nil
		}
	}
	kve, err := pr.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return progressEntry{}, nil
	}
	if err != nil {
		return progressEntry{}, fmt.Errorf("read progress %s: %w", key, err)
	}
	val, held := strings.CutSuffix(string(kve.Value()), "h")
	v, err := strconv.ParseUint(val, 10, 64)
	if err != nil {
		return progressEntry{}, fmt.Errorf("progress %s is not a version: %q", key, kve.Value())
	}
	e := progressEntry{version: v, rev: kve.Revision(), held: held}
	pr.remember(key, e)
	return e, nil
}

func (pr *progress) remember(key string, e progressEntry) {
	pr.mu.Lock()
	if len(pr.cache) >= maxProgressCache {
		clear(pr.cache)
	}
	pr.cache[key] = e
	pr.mu.Unlock()
}

func (pr *progress) forget(key string) {
	pr.mu.Lock()
	delete(pr.cache, key)
	pr.mu.Unlock()
}

// advance writes version v for key over e (CAS on its revision; create if
// e.rev is 0). errConflict: another writer moved it; read it fresh.
func (pr *progress) advance(ctx context.Context, key string, e progressEntry, v uint64, held bool) error {
	val := []byte(strconv.FormatUint(v, 10))
	if held {
		val = append(val, 'h')
	}
	var rev uint64
	var err error
	if e.rev == 0 {
		rev, err = pr.kv.Create(ctx, key, val)
	} else {
		rev, err = pr.kv.Update(ctx, key, val, e.rev)
	}
	if err != nil {
		pr.forget(key)
		if isCASConflict(err) {
			return errProgressMoved
		}
		return fmt.Errorf("write progress %s: %w", key, err)
	}
	pr.remember(key, progressEntry{version: v, rev: rev, held: held})
	return nil
}

var errProgressMoved = errors.New("progress moved")

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
func (p *Processor) checkProgress(ctx context.Context, key string, st *eventstore.Stream, prevSeq uint64, floor func() uint64, redelivered bool) (step, progressEntry, error) {
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
			return stepRun, e, nil
		case e.rev != 0 && st.Version <= e.version:
			return stepDone, e, nil // progress only grows: even a cached one is right
		case e.rev != 0 && st.Version == e.version+1:
			return stepRun, e, nil
		}
		if !fresh {
			continue
		}
		return stepEarly, e, nil
	}
}

// orderedMsg is what the Ordered functions of one message share: where
// its aggregate's previous version is, whether it was delivered before,
// and the consumer's ack floor, read at most once.
type orderedMsg struct {
	prevSeq     uint64
	redelivered bool
	floor       *uint64
	durable     string
}

func (p *Processor) newOrderedMsg(g *group, st *eventstore.Stream, m jetstream.Msg) *orderedMsg {
	o := &orderedMsg{prevSeq: previousSeq(m, st), redelivered: true, durable: DurableName(p.context, g.name)}
	if md, err := m.Metadata(); err == nil {
		o.redelivered = md.NumDelivered > 1
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
// yet, or the progress cannot be read).
func (p *Processor) orderedBegin(ctx context.Context, f *function, st *eventstore.Stream, o *orderedMsg) (string, progressEntry, step) {
	key := p.holdKey(f, eventIDOf(st, &eventstore.Event{}).AggregateID)
	s, e, err := p.checkProgress(ctx, key, st, o.prevSeq, func() uint64 { return p.ackFloor(ctx, o) }, o.redelivered)
	if err != nil {
		p.o.logger.Warn("amends processor: cannot read the progress of an Ordered function; the message will be redelivered",
			"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key, "err", err)
		return key, e, stepEarly
	}
	return key, e, s
}

// orderedEnd advances f's progress to version after it was dispatched;
// false if the write failed (the message is redelivered and f, done,
// skipped then).
func (p *Processor) orderedEnd(ctx context.Context, f *function, key string, e progressEntry, version uint64) bool {
	pr := p.holds.progress
	err := pr.advance(ctx, key, e, version, p.holds.cache.held(key))
	if errors.Is(err, errProgressMoved) {
		if e, gerr := pr.get(ctx, key, true); gerr == nil && e.version >= version {
			return true // another delivery of it finished first
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
// store's Amends-Prev-Seqs header, newest first), or, when the message
// does not say, the sequence just before st's: all earlier messages.
func previousSeq(m jetstream.Msg, st *eventstore.Stream) uint64 {
	if h := m.Headers(); h != nil {
		prevs := h.Get(jsstore.HeaderPrevSeqs)
		if i := strings.IndexByte(prevs, ','); i >= 0 {
			prevs = prevs[:i]
		}
		if seq, err := strconv.ParseUint(prevs, 10, 64); err == nil && seq > 0 {
			return seq
		}
	}
	return max(st.Seq, 1) - 1
}
