package quarantine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultStream is the name of the quarantine stream; its subjects are
// "<name>.<consumer>.<stream>.<sequence>".
const DefaultStream = "amends_quarantine"

// DefaultMaxEntries bounds the entries kept: beyond it the oldest go.
const DefaultMaxEntries = 100_000

// maxEntrySize bounds one stored entry; Record's entries are far smaller
// (the error is cut to 1 KiB), and List never reads more per entry.
const maxEntrySize = 8 << 10

// defaultLogEvery is how often at most one line is logged for each
// consumer and reason.
const defaultLogEvery = 10 * time.Second

// Clock tells the time; *fakeclock.Clock satisfies it.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Quarantine records and lists quarantined messages (see the package
// doc). It provisions its stream on first use. A Quarantine is safe for
// concurrent use; several consumers, processes and machines may share its
// stream.
type Quarantine struct {
	js   jetstream.JetStream
	opts options

	mu          sync.Mutex
	stream      jetstream.Stream // nil until provisioned
	counts      map[countKey]uint64
	logged      map[countKey]time.Time
	suppressed  map[countKey]uint64
	provisionMu sync.Mutex
}

type countKey struct {
	consumer string
	reason   Reason
}

type options struct {
	stream     string
	replicas   int
	storage    jetstream.StorageType
	maxEntries int64
	maxAge     time.Duration
	logEvery   time.Duration
	clock      Clock
	logger     *slog.Logger
	unaudited  func(context.Context, Entry)
}

// Option configures a Quarantine. An option that cannot be applied makes
// New return an error wrapping ErrInvalidOption.
type Option func(*options) error

// WithUnaudited calls f with each entry RecordKV stored for a value that
// would change behaviour without the actor amends writes with every such
// change (a forced circuit without its operator, a rule without the audit
// entry of its creation: the cause has an Unaudited method that reports
// true), once it is stored: serve writes its first sighting to the audit
// log. f runs on the caller's goroutine and must not block for long.
func WithUnaudited(f func(context.Context, Entry)) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("the unaudited hook is nil: %w", ErrInvalidOption)
		}
		o.unaudited = f
		return nil
	}
}

// WithStream names the stream (default DefaultStream). The name is also
// the first token of its subjects, so it must be a valid subject token.
func WithStream(name string) Option {
	return func(o *options) error {
		if name == "" || strings.ContainsAny(name, ".*> \t\r\n/\\") {
			return fmt.Errorf("stream name %q must be a non-empty name without dots, wildcards, spaces or slashes: %w", name, ErrInvalidOption)
		}
		o.stream = name
		return nil
	}
}

// WithReplicas sets the replica count of the stream when it is created
// (default 1; 3 on a cluster).
func WithReplicas(n int) Option {
	return func(o *options) error {
		if !bounds.Within(n, 1, 5) {
			return fmt.Errorf("replicas must be between 1 and 5, got %d: %w", n, ErrInvalidOption)
		}
		o.replicas = n
		return nil
	}
}

// WithStorage sets the storage of the stream when it is created (default
// jetstream.FileStorage).
func WithStorage(st jetstream.StorageType) Option {
	return func(o *options) error {
		if st != jetstream.FileStorage && st != jetstream.MemoryStorage {
			return fmt.Errorf("storage %d is neither file nor memory: %w", st, ErrInvalidOption)
		}
		o.storage = st
		return nil
	}
}

// WithMemoryStorage is WithStorage(jetstream.MemoryStorage): entries are
// lost when the server restarts (tests).
func WithMemoryStorage() Option { return WithStorage(jetstream.MemoryStorage) }

// WithMaxEntries bounds the entries kept when the stream is created
// (default DefaultMaxEntries); beyond it the oldest are dropped.
func WithMaxEntries(n int64) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("max entries must be at least 1, got %d: %w", n, ErrInvalidOption)
		}
		o.maxEntries = n
		return nil
	}
}

// WithMaxAge drops entries older than d when the stream is created
// (default 0: kept until DefaultMaxEntries pushes them out).
func WithMaxAge(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("max age must not be negative, got %s: %w", d, ErrInvalidOption)
		}
		o.maxAge = d
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()) and how often at
// most it gets a line for each consumer and reason (every <= 0: the
// default, 10s). Lines left out are counted in the next one.
func WithLogger(l *slog.Logger, every time.Duration) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("logger is nil: %w", ErrInvalidOption)
		}
		o.logger = l
		if every > 0 {
			o.logEvery = every
		}
		return nil
	}
}

// WithClock sets the clock of the entries' times and of the log's rate
// limit (default the system clock).
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		o.clock = c
		return nil
	}
}

// New returns a Quarantine on js. It does no I/O: the stream is created
// (or an existing one checked) on the first Record or List, or by
// Provision.
func New(js jetstream.JetStream, opts ...Option) (*Quarantine, error) {
	o := options{stream: DefaultStream, replicas: 1, storage: jetstream.FileStorage, maxEntries: DefaultMaxEntries,
		logEvery: defaultLogEvery, clock: systemClock{}, logger: slog.Default()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if js == nil {
		return nil, fmt.Errorf("JetStream is nil: %w", ErrInvalidOption)
	}
	return &Quarantine{js: js, opts: o, counts: map[countKey]uint64{}, logged: map[countKey]time.Time{}, suppressed: map[countKey]uint64{}}, nil
}

// StreamConfig returns the stream the Quarantine creates.
func (q *Quarantine) StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              q.opts.stream,
		Description:       "amends: messages consumers could never handle, terminated",
		Subjects:          []string{q.opts.stream + ".>"},
		Retention:         jetstream.LimitsPolicy,
		MaxMsgs:           q.opts.maxEntries,
		MaxAge:            q.opts.maxAge,
		MaxMsgsPerSubject: 1,
		MaxMsgSize:        maxEntrySize,
		Discard:           jetstream.DiscardOld,
		Storage:           q.opts.storage,
		Replicas:          q.opts.replicas,
		AllowDirect:       true,
	}
}

// Provision creates the stream, or checks that an existing one has its
// subjects and keeps one message per subject (other limits are left as an
// operator set them). It returns an error wrapping ErrIncompatibleStream if
// not, or JetStream's error. Calling it again after success does no I/O.
func (q *Quarantine) Provision(ctx context.Context) error {
	_, err := q.handle(ctx)
	return err
}

func (q *Quarantine) handle(ctx context.Context) (jetstream.Stream, error) {
	q.mu.Lock()
	s := q.stream
	q.mu.Unlock()
	if s != nil {
		return s, nil
	}
	q.provisionMu.Lock()
	defer q.provisionMu.Unlock()
	q.mu.Lock()
	s = q.stream
	q.mu.Unlock()
	if s != nil {
		return s, nil
	}
	want := q.StreamConfig()
	s, err := q.js.CreateStream(ctx, want)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		s, err = q.js.Stream(ctx, want.Name)
		if err == nil {
			have := s.CachedInfo().Config
			if len(have.Subjects) != 1 || have.Subjects[0] != want.Subjects[0] || have.MaxMsgsPerSubject != 1 {
				return nil, fmt.Errorf("stream %s has subjects %v and %d messages per subject, want %v and 1: %w",
					want.Name, have.Subjects, have.MaxMsgsPerSubject, want.Subjects, ErrIncompatibleStream)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("quarantine stream %s: %w", want.Name, err)
	}
	q.mu.Lock()
	q.stream = s
	q.mu.Unlock()
	return s, nil
}

// subject is where the entry of consumer's message seq of stream goes.
// Names JetStream accepts for streams and consumers are subject tokens;
// anything else is replaced so that the entry is still written.
func (q *Quarantine) subject(consumer, stream string, seq uint64) string {
	return q.opts.stream + "." + token(consumer) + "." + token(stream) + "." + strconv.FormatUint(seq, 10)
}

func token(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}

// Record stores the trace of message m, which consumer is about to
// terminate for reason (cause says what went wrong), counts it and logs it
// (rate-limited). The caller terminates m (Term) once Record returned nil;
// on an error (the stream cannot be written) it should redeliver m later,
// so that no message is terminated without a trace. Quarantining the same
// message again replaces its entry. Safe for concurrent use.
func (q *Quarantine) Record(ctx context.Context, m jetstream.Msg, consumer string, reason Reason, cause error) error {
	e := Entry{Subject: m.Subject(), Consumer: consumer, Reason: reason, At: q.opts.clock.Now().UnixMilli()}
	if cause != nil {
		e.Error = truncate(cause.Error(), maxErrorLen)
	}
	if md, err := m.Metadata(); err == nil {
		e.Stream, e.Seq, e.Deliveries = md.Stream, md.Sequence.Stream, md.NumDelivered
	}
	return q.Put(ctx, e)
}

// RecordKV stores the trace of an entry of a KV bucket that its decoder
// refused (cause), which the bucket's users skip: an Entry of Kind KindKV
// with the bucket and key, the bucket's stream (KV_<bucket>) and the
// entry's revision as stream and sequence, the bucket as consumer and
// reason ReasonInvalidEntry. Recording the same revision again replaces
// its entry. It is counted and logged as Record's entries are. Errors as
// Put's. Safe for concurrent use; *Quarantine satisfies the KV layer's
// recorder this way.
func (q *Quarantine) RecordKV(ctx context.Context, bucket, key string, revision uint64, cause error) error {
	e := Entry{Kind: KindKV, Bucket: truncate(bucket, 256), Key: truncate(key, 1024), Stream: "KV_" + truncate(bucket, 256), Seq: revision,
		Subject: "$KV." + truncate(bucket, 256) + "." + key, Consumer: truncate(bucket, 256), Reason: ReasonInvalidEntry, At: q.opts.clock.Now().UnixMilli()}
	if cause != nil {
		e.Error = cause.Error()
	}
	if err := q.Put(ctx, e); err != nil {
		return err
	}
	var u interface{ Unaudited() bool }
	if q.opts.unaudited != nil && errors.As(cause, &u) && u.Unaudited() {
		q.opts.unaudited(ctx, e)
	}
	return nil
}

// Put stores e (its ID is ignored), counts it and logs it, as Record does
// for a message. It returns an error wrapping ErrIncompatibleStream, or
// JetStream's error, if the entry could not be stored.
func (q *Quarantine) Put(ctx context.Context, e Entry) error {
	e.ID = 0
	e.Subject = truncate(e.Subject, 1024)
	e.Key = truncate(e.Key, 1024)
	e.Error = truncate(e.Error, maxErrorLen)
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode quarantine entry: %w", err)
	}
	if _, err := q.handle(ctx); err != nil {
		return err
	}
	subject := q.subject(e.Consumer, e.Stream, e.Seq)
	_, err = q.js.Publish(ctx, subject, data)
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		// The stream was deleted since it was provisioned: once more.
		q.mu.Lock()
		q.stream = nil
		q.mu.Unlock()
		if _, err := q.handle(ctx); err != nil {
			return err
		}
		_, err = q.js.Publish(ctx, subject, data)
	}
	if err != nil {
		return fmt.Errorf("quarantine %s sequence %d for %s: %w", e.Stream, e.Seq, e.Consumer, err)
	}
	q.count(e)
	return nil
}

// count counts e and logs it unless a line for its consumer and reason
// was logged less than logEvery ago.
func (q *Quarantine) count(e Entry) {
	k := countKey{e.Consumer, e.Reason}
	now := q.opts.clock.Now()
	q.mu.Lock()
	q.counts[k]++
	last, seen := q.logged[k]
	log := !seen || now.Sub(last) >= q.opts.logEvery || now.Before(last)
	var suppressed uint64
	if log {
		q.logged[k], suppressed, q.suppressed[k] = now, q.suppressed[k], 0
	} else {
		q.suppressed[k]++
	}
	q.mu.Unlock()
	if log {
		if e.Kind == KindKV {
			q.opts.logger.Error("amends: invalid KV entry quarantined and skipped; list it with `amends quarantine list`",
				"bucket", e.Bucket, "key", e.Key, "revision", e.Seq, "reason", string(e.Reason), "err", e.Error, "alsoQuarantinedSinceLastLine", suppressed)
			return
		}
		q.opts.logger.Error("amends: message quarantined and terminated; list it with `amends quarantine list`",
			"consumer", e.Consumer, "stream", e.Stream, "seq", e.Seq, "subject", e.Subject, "reason", string(e.Reason),
			"deliveries", e.Deliveries, "err", e.Error, "alsoQuarantinedSinceLastLine", suppressed)
	}
}

// Count is the number of messages one consumer quarantined for one reason.
type Count struct {
	Consumer string
	Reason   Reason
	N        uint64
}

// Counts returns how many messages this Quarantine recorded since it was
// created, by consumer and reason, sorted by consumer then reason.
func (q *Quarantine) Counts() []Count {
	q.mu.Lock()
	out := make([]Count, 0, len(q.counts))
	for k, n := range q.counts {
		out = append(out, Count{Consumer: k.consumer, Reason: k.reason, N: n})
	}
	q.mu.Unlock()
	sortCounts(out)
	return out
}
