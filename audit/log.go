package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/token"
)

// DefaultStream is the audit stream; its subjects are
// SubjectPrefix + "<kind>.<actor>".
const (
	DefaultStream = "AMENDS_audit"
	SubjectPrefix = "amends.audit."
)

// Defaults of the stream when Open creates it.
const (
	// DefaultMaxAge is how long entries are kept: 90 days.
	DefaultMaxAge = 90 * 24 * time.Hour
	// DefaultMaxEntries bounds the entries kept: a million (at most 4 GiB
	// at the largest entry, far less in practice). A count, unlike a byte
	// limit, reserves no storage of the account.
	DefaultMaxEntries = 1_000_000
)

// ErrInvalidQuery is wrapped by Query's errors for a query it cannot run.
var ErrInvalidQuery = errors.New("audit: invalid query")

// ErrIncompatibleStream: a stream named DefaultStream exists with other
// subjects.
var ErrIncompatibleStream = errors.New("audit: incompatible stream")

// actors encodes an actor as a subject token ("_" for none): the codec of
// the event store's subjects, with its own mark.
var actors = token.Codec{Mark: '~'}

// actorToken is the subject token of actor.
func actorToken(actor string) string {
	if actor == "" {
		return "~" // the codec never makes a lone mark
	}
	t, _ := actors.Encode(actor) // only "" fails
	return t
}

// Log writes and reads the audit stream. It is safe for concurrent use;
// every serve of a deployment may share the stream.
type Log struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	now    func() time.Time
}

// Config configures the stream when Open creates it.
type Config struct {
	// Replicas of the stream (default 1; 3 on a cluster).
	Replicas int
	// Storage of the stream (default file).
	Storage jetstream.StorageType
	// MaxAge and MaxEntries bound what is kept (defaults DefaultMaxAge and
	// DefaultMaxEntries); beyond them the oldest entries go.
	MaxAge     time.Duration
	MaxEntries int64
	// Now tells the time of entries without one (default time.Now).
	Now func() time.Time
}

// Open returns the log on js, creating its stream if it is missing. An
// existing stream keeps its limits (an operator may have changed them); one
// with other subjects is an error wrapping ErrIncompatibleStream.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Log, error) {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	want := jetstream.StreamConfig{
		Name: DefaultStream, Description: "amends: the audit log (failed authentications, sign-ins, reads of original events)",
		Subjects: []string{SubjectPrefix + ">"}, Storage: cfg.Storage, Replicas: max(cfg.Replicas, 1),
		MaxAge: cfg.MaxAge, MaxMsgs: cfg.MaxEntries, MaxMsgSize: maxEntryBytes, Discard: jetstream.DiscardOld,
		AllowDirect: true,
	}
	s, err := js.CreateStream(ctx, want)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		s, err = js.Stream(ctx, DefaultStream)
		if err == nil {
			if have := s.CachedInfo().Config.Subjects; len(have) != 1 || have[0] != want.Subjects[0] {
				return nil, fmt.Errorf("stream %s has subjects %v, want %v: %w", DefaultStream, have, want.Subjects, ErrIncompatibleStream)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("audit stream %s: %w", DefaultStream, err)
	}
	return &Log{js: js, stream: s, now: cfg.Now}, nil
}

// Record stores e (its Seq is ignored; a zero Time is now) and returns
// once JetStream acknowledged it, or JetStream's error. Fields over their
// limits are cut, and characters a terminal would not show replaced, so
// that an entry is never refused for what a client sent.
func (l *Log) Record(ctx context.Context, e api.AuditEntry) error {
	e.Seq = 0
	if e.Time <= 0 {
		e.Time = l.now().UnixMilli()
	}
	if _, err := ParseKind(string(e.Kind)); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := checkCredential(e.Credential); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	clean(&e)
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	if _, err := l.js.Publish(ctx, SubjectPrefix+string(e.Kind)+"."+actorToken(e.Actor), data); err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Kind, err)
	}
	return nil
}
