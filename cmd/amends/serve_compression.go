package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
)

// compressionFlags choose how the compensation stream and the views
// bucket are stored (JetStream's S2 compression, or none) and whether serve
// changes existing ones in place at start.
type compressionFlags struct {
	compression string
	compressNow bool
}

func (f *compressionFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.compression, "compression", "s2",
		"how the compensation stream and the views bucket are stored on disk: s2 (JetStream's S2 compression; readers see the same messages) or none; an existing stream keeps its own until --compress-existing")
}

// addCommandLineOnly adds --compress-existing, which changes existing
// streams: never from the environment or a config file.
func (f *compressionFlags) addCommandLineOnly(fs *pflag.FlagSet) {
	fs.BoolVar(&f.compressNow, "compress-existing", false,
		"at start, change the existing compensation stream and views bucket to --compression in place (nothing is rewritten or stopped; the server compresses the blocks it fills from then on); not from the environment")
}

// config validates the flags into cfg.
func (f *compressionFlags) config(cfg *serveConfig) error {
	switch f.compression {
	case "s2":
		cfg.compression = jetstream.S2Compression
	case "none":
		cfg.compression = jetstream.NoCompression
	default:
		return usageErrorf("--compression must be s2 or none, got %q", clipText(f.compression, 40))
	}
	cfg.compressExisting = f.compressNow
	return nil
}

// storeCompression is the event store's option for cfg's compression.
func storeCompression(cfg serveConfig) []jsstore.Option {
	if cfg.compression == jetstream.S2Compression {
		return []jsstore.Option{jsstore.WithCompressed(aggregate.Context)}
	}
	return nil
}

// viewsCompression is the views bucket's option for cfg's compression.
func viewsCompression(cfg serveConfig) []projection.BucketOption {
	if cfg.compression == jetstream.S2Compression {
		return []projection.BucketOption{projection.WithBucketCompression()}
	}
	return nil
}

// checkCompression reports, at start, an existing compensation stream or
// views bucket stored otherwise than --compression, and with
// --compress-existing changes it in place. A stream not created yet is
// created as --compression says.
func checkCompression(ctx context.Context, cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, logger *slog.Logger) error {
	for _, stream := range []string{store.StreamName(aggregate.Context), "KV_" + projection.DefaultBucket} {
		c, err := jsstore.SetCompression(ctx, js, stream, cfg.compression, !cfg.compressExisting)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			continue
		case err != nil:
			return err
		case c.Changed:
			logger.Info("--compress-existing: the stream is compressed from now on", "stream", stream, "from", c.From, "to", c.To,
				"messages", c.Messages, "bytes", c.Bytes)
		case c.From != c.To:
			logger.Warn("the stream is stored otherwise than --compression; serve --compress-existing changes it in place", "stream", stream,
				"compression", c.From, "wanted", c.To, "messages", c.Messages, "bytes", c.Bytes)
		}
	}
	return nil
}
