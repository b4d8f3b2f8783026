package archive

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of what an archive holds and reads.
const (
	// MaxObjectBytes bounds a stored object (compressed) or manifest.
	MaxObjectBytes = 512 << 20
	// MaxLineBytes bounds one NDJSON line: a stream of the store's
	// largest message size (1 MiB by default, at most the NATS max
	// payload of 64 MiB) with its wrapper.
	MaxLineBytes = 65 << 20
	// MaxSpecBytes bounds a "dir:" or "objectstore:" spec.
	MaxSpecBytes = 4096
)

// Sink is where an archive's objects are kept. Put stores data under name
// durably before it returns (a directory: written to a temporary file,
// synced, renamed, the directory synced; an Object Store: put, its digest
// checked by the server). Get returns what Put stored, or an error
// matching ErrNotFound; List returns every name, sorted. Names are those
// this package makes (ValidName). Implementations are safe for concurrent
// use.
type Sink interface {
	Put(ctx context.Context, name string, data []byte) error
	Get(ctx context.Context, name string) ([]byte, error)
	List(ctx context.Context) ([]string, error)
	// String names the sink as Open reads it ("dir:/path").
	String() string
}

var nameRE = regexp.MustCompile(`^sweep-[0-9]{12}(-[0-9a-f]{16}\.ndjson\.gz|\.manifest\.json)$`)

// ValidName reports, as an error matching ErrInvalid, whether name is one
// this package writes.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("object name %q is not sweep-<12 digits>-<16 hex>.ndjson.gz or sweep-<12 digits>.manifest.json: %w", clip(name), ErrInvalid)
	}
	return nil
}

var bucketRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Open returns the sink spec names: "dir:/path" (a directory, created
// with mode 0700 if missing) or "objectstore:BUCKET" (a JetStream Object
// Store bucket on js, created with replicas if missing; js may be nil for
// a directory). Errors match ErrInvalid for a spec that is neither, too
// long, or names a bad path or bucket; others are the file system's or
// JetStream's.
func Open(ctx context.Context, js jetstream.JetStream, spec string, replicas int) (Sink, error) {
	if len(spec) > MaxSpecBytes {
		return nil, fmt.Errorf("archive spec is %d bytes, over the limit of %d: %w", len(spec), MaxSpecBytes, ErrInvalid)
	}
	kind, arg, ok := strings.Cut(spec, ":")
	switch {
	case ok && kind == "dir":
		return OpenDir(arg)
	case ok && kind == "objectstore":
		if !bucketRE.MatchString(arg) {
			return nil, fmt.Errorf("archive bucket %q must be 1 to 64 of A-Z a-z 0-9 _ -: %w", clip(arg), ErrInvalid)
		}
		if js == nil {
			return nil, fmt.Errorf("archive %s needs a NATS connection: %w", spec, ErrInvalid)
		}
		return OpenObjectStore(ctx, js, arg, replicas)
	default:
		return nil, fmt.Errorf("archive spec %q must be dir:/path or objectstore:BUCKET: %w", clip(spec), ErrInvalid)
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
