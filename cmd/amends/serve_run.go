package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natsconn"
	"github.com/amends-dev/amends/internal/transient"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

const (
	// defaultStartupTimeout bounds start-up by default (--startup-timeout):
	// provisioning the event store and opening the buckets, each retried
	// through transient errors (a leader election, a lost server) until
	// then.
	defaultStartupTimeout = 60 * time.Second
	// drainTimeout bounds draining the NATS connection at shutdown.
	drainTimeout = 30 * time.Second
)

// run is serve: it opens the NATS connection (starting the embedded server
// or connecting to cfg.client), provisions the event store, calls cfg.ready,
// and runs the control plane's components until ctx ends. Then it drains
// the connection, shuts the embedded server down and returns nil. It
// returns an error if starting fails or a component fails; settings that
// natsconn rejects are usage errors.
func run(ctx context.Context, cfg serveConfig, logger *slog.Logger) error {
	lim := raiseFileLimit()
	conns, err := httpConnCap(cfg.httpMaxConns, lim)
	if err != nil {
		return err
	}
	cfg.httpMaxConns = conns
	logFileLimits(logger, lim, conns)
	conn, err := openNATS(ctx, cfg, logger)
	if err != nil {
		return err
	}
	err = plainError(serve(ctx, cfg, conn, logger))
	conn.close(logger)
	if err != nil && ctx.Err() != nil {
		// Stopped by a signal before it was up: a clean stop, not a failure.
		logger.Info("amends stopped while starting", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	logger.Info("amends stopped")
	return nil
}

// serve runs on an open connection until ctx ends or a component fails.
func serve(ctx context.Context, cfg serveConfig, conn *natsConn, logger *slog.Logger) error {
	if limit := conn.nc.MaxPayload(); int64(cfg.maxMsgSize) > limit {
		return fmt.Errorf("--max-msg-size %d exceeds the NATS server's max_payload of %d bytes: lower --max-msg-size or raise max_payload on the servers",
			cfg.maxMsgSize, limit)
	}
	js, err := jetstream.New(conn.nc)
	if err != nil {
		return fmt.Errorf("open JetStream: %w", err)
	}
	// The compensation stream allows purges, so that retention can remove
	// finished records (a stream that exists keeps what it has).
	store, err := jsstore.New(js, append(storeCompression(cfg), jsstore.WithStorage(cfg.storage), jsstore.WithReplicas(cfg.replicas), jsstore.WithMaxMsgSize(cfg.maxMsgSize),
		jsstore.WithRemovable(aggregate.Context))...)
	if err != nil {
		return fmt.Errorf("event store: %w", err)
	}
	stream := store.StreamName(aggregate.Context)
	if err := migrateStream(ctx, cfg, js, store, logger); err != nil {
		return err
	}
	// Start-up rides out an election: transient errors are retried until
	// --startup-timeout; the HTTP API, and with it /readyz, is not up before.
	sctx, cancel := context.WithTimeout(ctx, cfg.startupTimeout)
	defer cancel()
	err = transient.Retry(sctx, logger, "the event store stream "+stream, func(ctx context.Context) error {
		return store.Provision(ctx, aggregate.Context)
	})
	if err != nil {
		hint := provisionHint(err)
		if errors.Is(err, eventstore.ErrIncompatible) {
			hint = " (--storage, --replicas and --max-msg-size must match the existing stream)"
		}
		return fmt.Errorf("provision the event store stream %s (storage %s, replicas %d) on NATS at %s%s: %w",
			stream, strings.ToLower(cfg.storage.String()), cfg.replicas, conn.url, hint, err)
	}
	logger.Info("event store ready", "nats_url", conn.url, "stream", stream, "storage", strings.ToLower(cfg.storage.String()), "replicas", cfg.replicas)
	err = transient.Retry(sctx, logger, "the compression of the streams", func(ctx context.Context) error {
		return checkCompression(ctx, cfg, js, store, logger)
	})
	if err != nil {
		return fmt.Errorf("check the compression of the compensation stream and the views bucket: %w", err)
	}

	if cfg.migrateViews {
		return migrateViews(ctx, cfg, js, store, logger)
	}
	warnLegacyViews(sctx, js, logger)
	components, httpURL, err := controlPlane(sctx, cfg, conn.nc, js, store, logger)
	if err != nil {
		return err
	}
	cancel()
	components = append(components, component{"nats", func(ctx context.Context) error { return watchClosed(ctx, conn.nc, time.Second) }})
	info := serveInfo{NATSURL: conn.url, Stream: stream, HTTPURL: httpURL}
	if cfg.extra != nil {
		more, err := cfg.extra(ctx, js, info)
		if err != nil {
			return err
		}
		components = append(components, more...)
	}
	if cfg.ready != nil {
		cfg.ready(info)
	}
	logger.Info("amends serving; stop with SIGINT or SIGTERM")
	err = runComponents(ctx, logger, components...)
	logger.Info("amends stopping")
	return err
}

// provisionHint says what to check for errors that do not say it.
func provisionHint(err error) string {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return " (no JetStream answered: enable JetStream on the servers and for the account)"
	}
	return ""
}

// natsConn is serve's connection to NATS and, by default, the embedded
// server behind it.
type natsConn struct {
	nc       *nats.Conn
	url      string             // the server's client URL, passwords redacted
	embedded *natsconn.Embedded // nil when connected to an external server
}

// openNATS starts the embedded server and connects to it over TCP, or
// connects to the external server cfg.client names.
func openNATS(ctx context.Context, cfg serveConfig, logger *slog.Logger) (*natsConn, error) {
	if cfg.embedded == nil {
		ccfg := cfg.client
		ccfg.Logger = logger
		nc, err := natsconn.Connect(ccfg)
		if err != nil {
			return nil, settingError(err)
		}
		logger.Info("connected to NATS", "nats_url", nc.ConnectedUrlRedacted(), "server", nc.ConnectedServerName())
		return &natsConn{nc: nc, url: nc.ConnectedUrlRedacted()}, nil
	}

	ecfg := *cfg.embedded
	ecfg.Logger = logger.With("component", "nats-server")
	e, err := natsconn.StartEmbedded(ctx, ecfg)
	if err != nil {
		return nil, settingError(err)
	}
	logger.Info("embedded NATS server started", "nats_url", e.ClientURL(), "data_dir", e.DataDir(), "sync_always", ecfg.SyncAlways)
	nc, err := e.Connect(nats.Name("amends serve"))
	if err != nil {
		e.Shutdown()
		return nil, err
	}
	return &natsConn{nc: nc, url: e.ClientURL(), embedded: e}, nil
}

// settingError makes an error of a bad natsconn setting a usage error.
func settingError(err error) error {
	if errors.Is(err, natsconn.ErrInvalidConfig) {
		return usageError{err}
	}
	if errors.Is(err, natsconn.ErrDataDirLocked) {
		return fmt.Errorf("--data-dir: %w", err)
	}
	return err
}

// close drains the connection and shuts the embedded server down.
func (c *natsConn) close(logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := natsconn.Drain(ctx, c.nc); err != nil {
		logger.Warn("NATS connection did not drain cleanly", "err", err)
	}
	if c.embedded != nil {
		c.embedded.Shutdown()
		logger.Info("embedded NATS server stopped")
	}
}

// sentinels are the package-prefixed texts of errors serve may return at
// the end of a message; plainError drops them, since the rest of the
// message already says what is wrong.
var sentinels = []error{
	jsstore.ErrInvalidOption, eventstore.ErrIncompatible, eventstore.ErrCorrupt,
	scheduler.ErrInvalidOption, scheduler.ErrIncompatibleBucket,
	projection.ErrInvalidOption, projection.ErrIncompatibleBucket, projection.ErrCorruptView,
}

// plainError returns err with the text of any sentinel it wraps removed
// from its message; errors.Is and errors.As still see through it.
func plainError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			msg = strings.ReplaceAll(msg, ": "+s.Error(), "")
		}
	}
	if msg == err.Error() {
		return err
	}
	return &plainErr{msg: msg, err: err}
}

type plainErr struct {
	msg string
	err error
}

func (e *plainErr) Error() string { return e.msg }
func (e *plainErr) Unwrap() error { return e.err }

// watchClosed returns nil when ctx ends, or an error once nc is closed for
// good, checked every period. The connection reconnects by itself after
// network failures; it closes only when the server refused it in a way
// nats.go does not retry (a protocol error, say). Nothing of serve works
// then, so serve stops with the cause rather than stay up and unready.
func watchClosed(ctx context.Context, nc *nats.Conn, period time.Duration) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if nc.IsClosed() && ctx.Err() == nil {
			cause := "no error reported"
			if err := nc.LastError(); err != nil {
				cause = err.Error()
			}
			return fmt.Errorf("the NATS connection was closed and will not reconnect (%s); start amends serve again", cause)
		}
	}
}
