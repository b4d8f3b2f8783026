package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/amends-dev/amends/tracing"
)

// tracingFlushTimeout bounds how long serve waits at exit for the spans
// not yet exported.
const tracingFlushTimeout = 5 * time.Second

// serveTracing builds serve's tracer provider from the standard OTEL_*
// variables (see tracing.FromEnv) and, when they configure an exporter,
// installs it as the global provider, which the scheduler, the HTTP API
// and any processor serve runs use. lookupEnv reads the variables that
// choose the exporter; the OTLP exporters read the process environment.
// The console exporter writes to console (serve's standard error, beside
// its logs). With nothing configured the global no-op provider stays. An
// unusable variable is a usage error naming it.
func serveTracing(ctx context.Context, logger *slog.Logger, lookupEnv func(string) (string, bool), console io.Writer) (*tracing.Setup, error) {
	setup, err := tracing.FromEnv(ctx, tracing.WithServiceName("amends"), tracing.WithConsole(console), tracing.WithLookupEnv(lookupEnv))
	if err != nil {
		return nil, usageError{errors.New(trimSentinel(err))}
	}
	if setup.Enabled() {
		otel.SetTracerProvider(setup.TracerProvider())
		otel.SetTextMapPropagator(propagation.TraceContext{})
		logger.Info("tracing enabled", "exporter", setup.Exporter())
	}
	return setup, nil
}

// stopTracing flushes and stops serve's exporter, logging a failure.
func stopTracing(setup *tracing.Setup, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := setup.Shutdown(ctx); err != nil {
		logger.Warn("tracing: spans not exported at exit", "err", err)
	}
}

// trimSentinel is err's message without the tracing package's sentinel.
func trimSentinel(err error) string {
	return strings.TrimSuffix(err.Error(), ": "+tracing.ErrInvalidConfig.Error())
}
