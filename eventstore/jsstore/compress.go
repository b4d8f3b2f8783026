package jsstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// WithCompressed has the streams of the given contexts stored with
// JetStream's S2 compression: the server compresses each message block
// once it is full, so what readers get is unchanged (the same messages,
// headers and sequences) and only the bytes on disk shrink. The records of
// the compensation context (aggregate.Context), whose messages repeat the
// event, the state and the stack trace, are the ones that gain; a service's
// own events may too (measure them with amends bench footprint).
//
// A stream created before keeps its compression: Provision accepts it
// either way, and Compress changes it in place.
func WithCompressed(contexts ...string) Option {
	return func(o *options) error {
		for _, c := range contexts {
			if err := eventstore.ValidateName("compressed context", c); err != nil {
				return invalidOption("compressed context %q: %v", c, err)
			}
			if !slices.Contains(o.compressed, c) {
				o.compressed = append(o.compressed, c)
			}
		}
		return nil
	}
}

// compression is the compression of context's stream (WithCompressed).
func (s *Store) compression(context string) jetstream.StoreCompression {
	if slices.Contains(s.opts.compressed, context) {
		return jetstream.S2Compression
	}
	return jetstream.NoCompression
}

// Compression is what Compress found, and did unless it was a dry run.
type Compression struct {
	// Stream is the stream's name.
	Stream string `json:"stream"`
	// From and To are its compression before and after ("none" or "s2").
	From string `json:"from"`
	To   string `json:"to"`
	// Changed reports that the stream's configuration was updated (never on
	// a dry run, nor when it had the compression already).
	Changed bool `json:"changed"`
	// Messages and Bytes are the stream's, as its state counts them
	// (uncompressed).
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
}

// Compress sets the compression of context's existing stream to what the
// store's options give it (WithCompressed: S2; otherwise none), in place,
// as SetCompression does. Errors are SetCompression's, or ErrInvalid for
// an invalid context name. Safe for concurrent use.
func (s *Store) Compress(ctx context.Context, context string, dryRun bool) (Compression, error) {
	if err := eventstore.ValidateName("context", context); err != nil {
		return Compression{}, err
	}
	return SetCompression(ctx, s.js, s.StreamName(context), s.compression(context), dryRun)
}

// SetCompression sets the compression of the existing stream named stream
// (an event store's, or a KV bucket's "KV_<bucket>") to want, in place: the
// messages, their sequences and the consumers stay, and nothing stops.
// The server compresses the message blocks it fills after the change; the
// blocks already full keep their form until the server rewrites them (a
// compaction), and a running server may apply the change only once it
// restarts. With dryRun it only reports what it would do. Errors wrap
// JetStream's (a stream that does not exist is jetstream.ErrStreamNotFound).
func SetCompression(ctx context.Context, js jetstream.JetStream, stream string, want jetstream.StoreCompression, dryRun bool) (Compression, error) {
	out := Compression{Stream: stream}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return out, fmt.Errorf("compress stream %s: %w", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return out, fmt.Errorf("compress stream %s: %w", stream, err)
	}
	out.From, out.To = compressionName(info.Config.Compression), compressionName(want)
	out.Messages, out.Bytes = info.State.Msgs, info.State.Bytes
	if info.Config.Compression == want || dryRun {
		return out, nil
	}
	cfg := info.Config
	cfg.Compression = want
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return out, fmt.Errorf("compress stream %s: %w", stream, err)
	}
	out.Changed = true
	return out, nil
}

// compressionName is c as JetStream's configuration writes it: "none" or
// "s2".
func compressionName(c jetstream.StoreCompression) string {
	if c == jetstream.S2Compression {
		return "s2"
	}
	return "none"
}
