package processor

import (
	"context"
	"sync"
	"time"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/inflight"
)

// A message becomes tasks: one per function that reacts to it (a replay
// message: one per prepare of this context). A task runs until it is
// finished or must wait for an immediate retry; then it waits on a timer,
// not in its lane, and its key (the function on the message's subject)
// is blocked: that function's tasks of the subject's later messages queue
// behind it, while every other task of the lane runs. When the timer fires
// the task resumes on its lane, and once it finishes the tasks queued
// behind it run in order. A message is settled when its last task
// finished. All of this state belongs to its lane's goroutine.

// task is one function's work on one message.
type task interface {
	// step runs the task until it finishes (more false) or must wait
	// before it can go on (more true): for wait, or, with wait
	// resumeLater, until work it started with ls.background is done.
	step(ctx context.Context, ls *laneState) (wait time.Duration, more bool)
	// key is what orders it: the function on the message's subject.
	key() taskKey
	// outcome is how the finished task wants its message settled, and
	// whether it is done: it must not run again if the message comes back.
	outcome() (d disposition, done bool)
	// message is the message it belongs to.
	message() *msgWork
	// bit is its place in the message's completion bits.
	bit() int
}

// taskKey orders tasks: one function (or, for replays, one function of a
// prepare) on one subject runs its tasks one at a time, in order.
type taskKey struct {
	f       *function
	name    string // for replays of functions not registered here
	subject string
}

// msgWork is one message being handled: its tasks not yet finished, the
// worst disposition of those finished, the bits of those done. A call no
// message carries (calltask.go) has a msgWork without m, which finish
// ends.
type msgWork struct {
	m       *inflight.Msg
	st      eventstore.Stream
	pending int
	result  disposition
	done    bits
	// finish settles the message once its last task finished: the live
	// consumer settles it with result; the replay consumer first releases
	// holds and quarantines what must be (replay.go).
	finish func(ctx context.Context, w *msgWork) disposition
	// cause is why a task asked for nak or term (replays).
	cause error
	// ordered is the message's ordered-functions context (progress.go).
	ordered *orderedMsg
}

// keyQueue is a blocked key: its task waiting on a timer, and the tasks
// of its key that arrived since.
type keyQueue struct {
	head    task
	waiting []task
	stop    func() bool // cancels the timer
}

// laneState is one lane's tasks: the blocked keys. Only the lane's
// goroutine touches it, and stop once the lane has stopped.
type laneState struct {
	r        *runner
	lane     *inflight.Lane
	stopping context.Context
	blocked  map[taskKey]*keyQueue
}

func newLaneState(r *runner, l *inflight.Lane, stopping context.Context) *laneState {
	return &laneState{r: r, lane: l, stopping: stopping, blocked: make(map[taskKey]*keyQueue)}
}

// begin starts the handling of w: pending counts the scheduling itself,
// so that a task finishing at once does not settle w before its siblings
// are scheduled.
func (ls *laneState) begin(w *msgWork) { w.pending = 1 }

// schedule runs t now, or queues it behind its key's waiting task.
func (ls *laneState) schedule(ctx context.Context, t task) {
	w := t.message()
	w.pending++
	k := t.key()
	if q := ls.blocked[k]; q != nil {
		q.waiting = append(q.waiting, t)
		return
	}
	ls.runFrom(ctx, k, t, nil)
}

// end ends the scheduling of w's tasks: it settles w if they all finished.
func (ls *laneState) end(ctx context.Context, w *msgWork) { ls.release(ctx, w) }

// runFrom runs t, then the tasks waiting behind it, until one must wait
// (its key stays blocked) or none is left (the key is free again).
func (ls *laneState) runFrom(ctx context.Context, k taskKey, t task, q *keyQueue) {
	for {
		wait, more := t.step(ctx, ls)
		if more {
			if q == nil {
				q = &keyQueue{}
			}
			q.head, q.stop = t, nil
			ls.blocked[k] = q
			if wait != resumeLater {
				q.stop = ls.r.p.after(ctx, wait, func() { ls.lane.Post(func(ctx context.Context) { ls.resume(ctx, k) }) })
			}
			return
		}
		ls.finished(ctx, t)
		if q == nil {
			return
		}
		if len(q.waiting) == 0 || ls.stopping.Err() != nil {
			// Stopping: the tasks still waiting never start; their
			// messages are nak'ed when the runtime stops.
			delete(ls.blocked, k)
			return
		}
		t = q.waiting[0]
		q.waiting[0] = nil
		q.waiting = q.waiting[1:]
	}
}

// resumeLater is the wait of a task that resumes once the work it started
// with background is done.
const resumeLater time.Duration = -1

// background runs fn (a recording: I/O that would hold the lane) on the
// runner's recording goroutines (workers: a few per lane, the rest wait
// their turn) and resumes key k's task on its lane once fn returned;
// the task returns resumeLater, more. The runner waits for fn before its
// Run returns. If the lane stopped meanwhile, the task never
// resumes: its message is nak'ed with the rest.
func (ls *laneState) background(ctx context.Context, k taskKey, fn func(ctx context.Context)) {
	ls.r.background.Go(func() {
		fn(ctx)
		ls.lane.Post(func(ctx context.Context) { ls.resume(ctx, k) })
	})
}

// resume goes on with key k's waiting task, once its timer fired or its
// background work is done.
func (ls *laneState) resume(ctx context.Context, k taskKey) {
	if q := ls.blocked[k]; q != nil {
		ls.runFrom(ctx, k, q.head, q)
	}
}

// finished accounts for t's end in its message.
func (ls *laneState) finished(ctx context.Context, t task) {
	w := t.message()
	d, done := t.outcome()
	w.result = max(w.result, d)
	if done {
		w.done.set(t.bit())
	}
	ls.release(ctx, w)
}

// release drops one pending count of w and settles w when none is left.
func (ls *laneState) release(ctx context.Context, w *msgWork) {
	w.pending--
	if w.pending > 0 {
		return
	}
	d := w.result
	if w.finish != nil {
		d = w.finish(ctx, w)
	}
	if w.m == nil {
		return // the work of no message (calltask.go)
	}
	r := ls.r
	switch d {
	case ack, term:
		r.done.forget(w.m.Seq(), d == ack)
	default:
		r.done.remember(w.m.Seq(), w.done)
	}
	r.settle(w.m, d)
}

// stop cancels the timers of the waiting tasks, once the runtime stopped
// (it nak'ed their messages).
func (ls *laneState) stop() {
	for k, q := range ls.blocked {
		if q.stop != nil {
			q.stop()
		}
		delete(ls.blocked, k)
	}
}

// after calls fn once d has passed, unless ctx ends first or the returned
// stop is called. With the real Sleeper it is a timer; an injected Sleeper
// (tests) waits in a goroutine of its own.
func (p *Processor) after(ctx context.Context, d time.Duration, fn func()) (stop func() bool) {
	if !p.o.sleeperSet {
		return time.AfterFunc(d, fn).Stop
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		if p.o.sleep(ctx, d) == nil {
			fn()
		}
	}()
	return func() bool { cancel(); return true }
}

// bits is a set of small integers: the tasks of a message that are done.
type bits struct {
	lo uint64
	hi []uint64
}

func (b *bits) set(i int) {
	if i < 64 {
		b.lo |= 1 << i
		return
	}
	w := i/64 - 1
	for len(b.hi) <= w {
		b.hi = append(b.hi, 0)
	}
	b.hi[w] |= 1 << (i % 64)
}

func (b bits) has(i int) bool {
	if i < 64 {
		return b.lo&(1<<i) != 0
	}
	w := i/64 - 1
	return w < len(b.hi) && b.hi[w]&(1<<(i%64)) != 0
}

func (b bits) union(o bits) bits {
	out := bits{lo: b.lo | o.lo}
	for i := range max(len(b.hi), len(o.hi)) {
		var x uint64
		if i < len(b.hi) {
			x |= b.hi[i]
		}
		if i < len(o.hi) {
			x |= o.hi[i]
		}
		out.hi = append(out.hi, x)
	}
	return out
}

// logEvery runs a function at most once per interval (a log line that
// would otherwise repeat for every message). Safe for concurrent use.
type logEvery struct {
	mu   sync.Mutex
	last time.Time
}

const logInterval = 30 * time.Second

func (l *logEvery) do(now time.Time, fn func()) {
	l.mu.Lock()
	due := l.last.IsZero() || now.Sub(l.last) >= logInterval || now.Before(l.last)
	if due {
		l.last = now
	}
	l.mu.Unlock()
	if due {
		fn()
	}
}
