package jsstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
)

// Defaults of the store's options.
const (
	DefaultSubjectPrefix = "amends"
	DefaultStreamPrefix  = "AMENDS_"
	DefaultMaxMsgSize    = 1 << 20
	DefaultDuplicates    = 2 * time.Minute
	DefaultAPIPrefix     = "$JS.API."
	// MaxPrefixLength is the longest subject, stream or API prefix, in
	// bytes: it keeps every subject the store sends within
	// MaxSubjectLength.
	MaxPrefixLength = 128
)

// Option configures a Store. An option that cannot be applied makes New
// return an error wrapping ErrInvalidOption.
type Option func(*options) error

type options struct {
	subjectPrefix string
	streamPrefix  string
	storage       jetstream.StorageType
	replicas      int
	maxMsgSize    int32
	duplicates    time.Duration
	apiPrefix     string
	cacheSize     int
	now           func() time.Time
	removable     []string // remove.go
	compressed    []string // compress.go
}

func defaultOptions() options {
	return options{
		subjectPrefix: DefaultSubjectPrefix,
		streamPrefix:  DefaultStreamPrefix,
		storage:       jetstream.FileStorage,
		replicas:      1,
		maxMsgSize:    DefaultMaxMsgSize,
		duplicates:    DefaultDuplicates,
		apiPrefix:     DefaultAPIPrefix,
		cacheSize:     1 << 16,
		now:           time.Now,
	}
}

func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidOption)
}

// WithSubjectPrefix sets the first token of every subject (default
// "amends"): a context's events live on "<prefix>.<context>.>". It may hold
// several dot-separated tokens of [A-Za-z0-9_-], MaxPrefixLength bytes in
// all.
func WithSubjectPrefix(prefix string) Option {
	return func(o *options) error {
		if len(prefix) > MaxPrefixLength {
			return invalidOption("subject prefix is %d bytes, over the limit of %d", len(prefix), MaxPrefixLength)
		}
		for _, tok := range strings.Split(prefix, ".") {
			if err := eventstore.ValidateName("subject prefix token", tok); err != nil {
				return invalidOption("subject prefix %q: %s", prefix, strings.TrimSuffix(err.Error(), ": "+eventstore.ErrInvalid.Error()))
			}
		}
		o.subjectPrefix = prefix
		return nil
	}
}

// WithStreamPrefix sets the prefix of stream names (default "AMENDS_"): a
// context's stream is "<prefix><context>". At most MaxPrefixLength bytes.
func WithStreamPrefix(prefix string) Option {
	return func(o *options) error {
		if len(prefix) > MaxPrefixLength {
			return invalidOption("stream prefix is %d bytes, over the limit of %d", len(prefix), MaxPrefixLength)
		}
		if strings.ContainsAny(prefix, ". *>/\\\t\r\n") {
			return invalidOption("stream prefix %q contains a character stream names forbid (. * > / \\ or whitespace)", prefix)
		}
		o.streamPrefix = prefix
		return nil
	}
}

// WithStorage selects file (default) or memory storage for new streams.
// Memory streams lose everything when the server stops and cost more to
// read long histories from; use them for tests and benchmarks.
func WithStorage(st jetstream.StorageType) Option {
	return func(o *options) error {
		if st != jetstream.FileStorage && st != jetstream.MemoryStorage {
			return invalidOption("storage %d is neither file nor memory", st)
		}
		o.storage = st
		return nil
	}
}

// WithReplicas sets the replica count of new streams: 1 (default) on a
// single server, 3 in a cluster. Only a replicated stream survives the loss
// of a machine.
func WithReplicas(n int) Option {
	return func(o *options) error {
		if !bounds.Within(n, 1, 5) {
			return invalidOption("replicas must be between 1 and 5, got %d", n)
		}
		o.replicas = n
		return nil
	}
}

// WithMaxMsgSize sets the largest stored stream in bytes (default 1 MiB);
// an append over it is rejected with eventstore.ErrInvalid. It cannot exceed
// the server's max_payload.
func WithMaxMsgSize(n int32) Option {
	return func(o *options) error {
		if n < 1024 {
			return invalidOption("max message size must be at least 1024 bytes, got %d", n)
		}
		o.maxMsgSize = n
		return nil
	}
}

// WithDuplicateWindow sets how long JetStream remembers a stream id for
// deduplication (default 2 minutes).
func WithDuplicateWindow(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Second {
			return invalidOption("duplicate window must be at least 1s, got %s", d)
		}
		o.duplicates = d
		return nil
	}
}

// WithAPIPrefix sets the JetStream API prefix (default "$JS.API."), for a
// JetStream domain or an imported API. It must end with a dot and be at
// most MaxPrefixLength bytes.
func WithAPIPrefix(prefix string) Option {
	return func(o *options) error {
		if len(prefix) > MaxPrefixLength {
			return invalidOption("api prefix is %d bytes, over the limit of %d", len(prefix), MaxPrefixLength)
		}
		if !strings.HasSuffix(prefix, ".") {
			return invalidOption("api prefix %q must end with a dot", prefix)
		}
		o.apiPrefix = prefix
		return nil
	}
}

// WithPositionCache sets how many aggregates' last positions the store
// remembers to append without reading first (default 65536; 0 turns the
// cache off).
func WithPositionCache(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return invalidOption("position cache size must be >= 0, got %d", n)
		}
		o.cacheSize = n
		return nil
	}
}

// WithClock sets the clock that stamps streams appended without a
// CreateTime, and those AppendEvents builds (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return invalidOption("clock is nil")
		}
		o.now = now
		return nil
	}
}
