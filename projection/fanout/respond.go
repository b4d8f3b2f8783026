package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index"
)

// Part is what a Responder answers from: an index and the partitions
// whose records it holds. *projection.Index with WithPartitions is one.
type Part interface {
	List(q api.Query) (api.Page, error)
	Count(f api.Filter) (int, error)
	Summary(f api.Filter) (api.Summary, error)
	FingerprintSummary(f api.Filter) ([]api.FingerprintGroup, error)
	// Partitions returns the partitions whose records the index holds in
	// full, and no record of any other (a Querier counts every record of
	// the answers as theirs), and whether it does: false while it loads.
	Partitions() ([]string, bool)
	// Unplaced returns the processors it saw records of that no
	// partition held when it saw them: a Querier names those the plan
	// does not place yet as missing.
	Unplaced() []string
	// WaitFor returns once the index holds record id at version or
	// later, or ctx's error.
	WaitFor(ctx context.Context, id string, version uint64) error
}

// ResponderConfig configures a Responder.
type ResponderConfig struct {
	// Instance names this instance as the partitions' plan does. Required.
	Instance string
	// Prefix starts the subject (default DefaultPrefix).
	Prefix string
	// Workers answer requests at once (default 4, at most 64).
	Workers int
	// Queue bounds the requests waiting for a worker (default 256, at most
	// 4096); past it NATS drops them and the asker hears nothing (it
	// reports this instance as unanswered).
	Queue int
	// Waits bounds the waits for a record's version (Querier.WaitFor)
	// held at once (default 256, at most 4096); past it a wait is
	// answered busy at once. Each holds a goroutine, not a worker.
	Waits int
	// Logger (default: discard).
	Logger *slog.Logger
}

// Responder answers the queries of Queriers from one instance's Part.
type Responder struct {
	nc      *nats.Conn
	part    Part
	subject string
	cfg     ResponderConfig
}

// NewResponder returns the Responder of part on nc. An instance name that
// cannot be a subject token, or a bound out of range, is an error matching
// ErrInvalidOption that names it. It does no I/O.
func NewResponder(nc *nats.Conn, part Part, cfg ResponderConfig) (*Responder, error) {
	if nc == nil || part == nil {
		return nil, fmt.Errorf("responder: a connection and a part are required: %w", ErrInvalidOption)
	}
	cfg.Prefix = cmpOr(cfg.Prefix, DefaultPrefix)
	cfg.Workers = cmpOr(cfg.Workers, 4)
	cfg.Queue = cmpOr(cfg.Queue, 256)
	cfg.Waits = cmpOr(cfg.Waits, 256)
	switch {
	case cfg.Workers < 1 || cfg.Workers > 64:
		return nil, fmt.Errorf("responder: workers must be 1 to 64, got %d: %w", cfg.Workers, ErrInvalidOption)
	case cfg.Queue < 1 || cfg.Queue > 4096:
		return nil, fmt.Errorf("responder: queue must be 1 to 4096, got %d: %w", cfg.Queue, ErrInvalidOption)
	case cfg.Waits < 1 || cfg.Waits > 4096:
		return nil, fmt.Errorf("responder: waits must be 1 to 4096, got %d: %w", cfg.Waits, ErrInvalidOption)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	subject, err := subjectOf(cfg.Prefix, cfg.Instance)
	if err != nil {
		return nil, fmt.Errorf("responder: %w", err)
	}
	return &Responder{nc: nc, part: part, subject: subject, cfg: cfg}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Run answers requests until ctx ends, then unsubscribes and returns nil
// once its workers have stopped. A subscription that cannot be made is
// its only error. A request it cannot read, or whose answer is too large
// for the connection, is answered with an error naming why; a request
// without a reply subject is dropped.
func (r *Responder) Run(ctx context.Context) error {
	msgs := make(chan *nats.Msg, r.cfg.Queue)
	sub, err := r.nc.ChanSubscribe(r.subject, msgs)
	if err != nil {
		return fmt.Errorf("responder: subscribe to %s: %w", r.subject, err)
	}
	var wg sync.WaitGroup
	waits := make(chan struct{}, r.cfg.Waits)
	for range r.cfg.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-msgs:
					r.respond(ctx, m, &wg, waits)
				}
			}
		})
	}
	<-ctx.Done()
	if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		r.cfg.Logger.Debug("responder: unsubscribe", "subject", r.subject, "err", err)
	}
	wg.Wait()
	return nil
}

// respond answers one request. A wait is answered from a goroutine of its
// own, one of at most cap(waits), added to wg; past the bound it is
// answered busy.
func (r *Responder) respond(ctx context.Context, m *nats.Msg, wg *sync.WaitGroup, waits chan struct{}) {
	if m.Reply == "" {
		return
	}
	req, err := readRequest(m.Data)
	if err != nil || req.Op != opWait {
		r.send(m, r.answer(req, err))
		return
	}
	select {
	case waits <- struct{}{}:
		wg.Go(func() {
			defer func() { <-waits }()
			r.send(m, r.wait(ctx, req))
		})
	default:
		r.send(m, reply{Partitions: []string{}, Error: &replyError{Kind: errBusy,
			Message: fmt.Sprintf("this instance holds %d waits already; ask again later", cap(waits))}})
	}
}

// wait is the reply to a wait request: whether the part holds the record
// at the version within the request's wait.
func (r *Responder) wait(ctx context.Context, req request) reply {
	held, ok := r.part.Partitions()
	if !ok {
		return loading()
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(req.Wait)*time.Millisecond)
	defer cancel()
	reached := r.part.WaitFor(wctx, req.ID, req.Version) == nil
	return reply{Partitions: sorted(held), Reached: &reached}
}

// send answers m with out, or with an error if out is too large for the
// connection.
func (r *Responder) send(m *nats.Msg, out reply) {
	msg, err := encodeReply(m.Reply, out, r.nc.MaxPayload())
	if err != nil {
		r.cfg.Logger.Error("responder: encode a reply", "err", err)
		return
	}
	if err := m.RespondMsg(msg); err != nil {
		r.cfg.Logger.Debug("responder: reply", "err", err)
	}
}

// answer is the reply to req, read with err: the answer of the part, with
// the partitions it holds before and after answering, or an error.
func (r *Responder) answer(req request, err error) reply {
	if err != nil {
		return reply{Partitions: []string{}, Error: &replyError{Kind: errInvalidQuery, Message: err.Error()}}
	}
	before, ok := r.part.Partitions()
	if !ok {
		return loading()
	}
	before = sorted(before)
	out := reply{Partitions: before, Unplaced: sorted(r.part.Unplaced())}
	switch req.Op {
	case opList:
		var p api.Page
		p, err = r.part.List(req.Query)
		out.Page = &p
	case opCount:
		var n int
		n, err = r.part.Count(req.Query.Filter)
		out.Count = &n
	case opSummary:
		var s api.Summary
		s, err = r.part.Summary(req.Query.Filter)
		out.Summary = &s
	case opFingerprints:
		var fps []api.FingerprintGroup
		if fps, err = r.part.FingerprintSummary(req.Query.Filter); fps == nil {
			fps = []api.FingerprintGroup{}
		}
		out.Fingerprints = &fps
	}
	switch {
	case errors.Is(err, index.ErrInvalidQuery):
		return reply{Partitions: before, Error: &replyError{Kind: errInvalidQuery, Message: err.Error()}}
	case err != nil:
		r.cfg.Logger.Warn("responder: a query failed", "op", req.Op, "err", err)
		return reply{Partitions: before, Error: &replyError{Kind: errFailed, Message: err.Error()}}
	case !r.same(before):
		return reply{Partitions: before, Error: &replyError{Kind: errMoved, Message: "the partitions of this instance changed while it answered; ask again"}}
	}
	return out
}

// same reports whether the part still holds exactly the partitions
// before, in full.
func (r *Responder) same(before []string) bool {
	after, ok := r.part.Partitions()
	return ok && slices.Equal(before, sorted(after))
}

// sorted returns a sorted copy of ids, never nil.
func sorted(ids []string) []string {
	out := slices.Clone(ids)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return out
}

// loading is the reply of a part that is loading its partitions.
func loading() reply {
	return reply{Partitions: []string{}, Error: &replyError{Kind: errLoading, Message: "this instance is loading the records of its partitions; ask again once it has"}}
}
