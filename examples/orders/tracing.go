package orders

import (
	"context"
	"io"
	"os"

	"github.com/amends-dev/amends/tracing"
)

// TraceEnv names the variable that makes the example print its spans:
// ORDERS_TRACE=stdout writes them, as JSON, to the writer Tracing is
// given. Without it the standard OTEL_* variables apply.
const TraceEnv = "ORDERS_TRACE"

// Tracing returns the example's tracer provider setup: spans written to w
// when ORDERS_TRACE=stdout, otherwise what the OTEL_* variables configure
// (OTEL_EXPORTER_OTLP_ENDPOINT for a collector; see tracing.FromEnv), and
// the global no-op provider when nothing is set. Give its TracerProvider
// to Config.TracerProvider and call Shutdown before exiting, which flushes
// the spans. An unusable variable is an error matching
// tracing.ErrInvalidConfig.
func Tracing(ctx context.Context, w io.Writer) (*tracing.Setup, error) {
	lookup := os.LookupEnv
	if v, _ := os.LookupEnv(TraceEnv); v == "stdout" {
		lookup = func(name string) (string, bool) {
			if name == "OTEL_TRACES_EXPORTER" {
				return tracing.ExporterConsole, true
			}
			return os.LookupEnv(name)
		}
	}
	return tracing.FromEnv(ctx, tracing.WithServiceName("orders"), tracing.WithConsole(w), tracing.WithLookupEnv(lookup))
}
