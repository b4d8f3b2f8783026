package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrInvalidConfig matches errors of FromEnv about an OTEL_* variable it
// cannot apply.
var ErrInvalidConfig = errors.New("tracing: invalid configuration")

// The exporters FromEnv knows, by their OTEL_TRACES_EXPORTER names.
const (
	ExporterNone    = "none"
	ExporterOTLP    = "otlp"
	ExporterConsole = "console"
)

// Setup is a tracer provider built by FromEnv, with what it exports to.
type Setup struct {
	exporter string
	tp       trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil: nothing of ours to shut down
}

// TracerProvider is the provider to give amends components: the SDK's
// when an exporter is configured, otherwise otel.GetTracerProvider().
func (s *Setup) TracerProvider() trace.TracerProvider { return s.tp }

// Exporter names what the provider exports to: "none", "console",
// "otlp/grpc" or "otlp/http".
func (s *Setup) Exporter() string { return s.exporter }

// Enabled reports whether FromEnv configured an exporter.
func (s *Setup) Enabled() bool { return s.sdk != nil }

// Shutdown flushes the spans not yet exported and stops the exporter; it
// returns the exporter's error, or ctx's if it ends first. It is a no-op
// without an exporter and safe to call more than once.
func (s *Setup) Shutdown(ctx context.Context) error {
	if s.sdk == nil {
		return nil
	}
	return s.sdk.Shutdown(ctx)
}

// Option configures FromEnv.
type Option func(*setupConfig)

type setupConfig struct {
	lookup  func(string) (string, bool)
	service string
	console io.Writer
	extra   []sdktrace.TracerProviderOption
}

// WithServiceName sets the service.name of the spans' resource when
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES do not (default "amends").
func WithServiceName(name string) Option { return func(c *setupConfig) { c.service = name } }

// WithLookupEnv makes FromEnv read the variables that choose the exporter
// and its protocol through lookup (default os.LookupEnv); the OTLP
// exporters read their endpoint, headers and TLS settings from the
// process environment.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(c *setupConfig) {
		if lookup != nil {
			c.lookup = lookup
		}
	}
}

func (c *setupConfig) getenv(name string) string {
	v, _ := c.lookup(name)
	return v
}

// WithConsole makes the console exporter write to w (default os.Stdout).
func WithConsole(w io.Writer) Option { return func(c *setupConfig) { c.console = w } }

// WithProviderOptions adds options to the SDK's tracer provider (a
// sampler, a span processor), when FromEnv builds one.
func WithProviderOptions(opts ...sdktrace.TracerProviderOption) Option {
	return func(c *setupConfig) { c.extra = append(c.extra, opts...) }
}

// FromEnv builds a tracer provider from the standard variables:
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none: no exporter.
//   - OTEL_TRACES_EXPORTER=otlp, or unset with OTEL_EXPORTER_OTLP_ENDPOINT
//     or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set: OTLP, over the protocol
//     of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL
//     ("http/protobuf", the default, or "grpc"); the exporter reads its
//     endpoint, headers, TLS and timeout from the other OTEL_EXPORTER_OTLP_*
//     variables.
//   - OTEL_TRACES_EXPORTER=console: human-readable JSON on standard output.
//   - nothing set: no exporter.
//
// Without an exporter the Setup holds otel.GetTracerProvider(), a no-op
// unless the program installed a provider. With one, spans are batched
// (OTEL_BSP_*), sampled as OTEL_TRACES_SAMPLER says (default: follow the
// parent, sample roots) and described by OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. FromEnv does not connect: an unreachable
// collector shows in export errors, through otel's error handler.
//
// An unknown exporter or protocol returns an error matching
// ErrInvalidConfig that names the variable and the values it takes.
func FromEnv(ctx context.Context, opts ...Option) (*Setup, error) {
	c := setupConfig{lookup: os.LookupEnv, service: "amends", console: os.Stdout}
	for _, o := range opts {
		o(&c)
	}
	none := &Setup{exporter: ExporterNone, tp: otel.GetTracerProvider()}
	if strings.EqualFold(strings.TrimSpace(c.getenv("OTEL_SDK_DISABLED")), "true") {
		return none, nil
	}
	name := strings.ToLower(strings.TrimSpace(c.getenv("OTEL_TRACES_EXPORTER")))
	if name == "" && (c.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || c.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		name = ExporterOTLP
	}
	var (
		exp      sdktrace.SpanExporter
		exporter string
		err      error
	)
	switch name {
	case "", ExporterNone:
		return none, nil
	case ExporterConsole:
		exporter = ExporterConsole
		exp, err = stdouttrace.New(stdouttrace.WithWriter(c.console))
	case ExporterOTLP:
		var protocol string
		protocol, err = c.otlpProtocol()
		if err != nil {
			return nil, err
		}
		switch protocol {
		case "grpc":
			exporter = "otlp/grpc"
			exp, err = otlptracegrpc.New(ctx)
		default:
			exporter = "otlp/http"
			exp, err = otlptracehttp.New(ctx)
		}
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER is %q; amends exports traces to one of otlp, console or none: %w", clip(name), ErrInvalidConfig)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing exporter %s: %v: %w", exporter, err, ErrInvalidConfig)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", c.service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing resource: %v: %w", err, ErrInvalidConfig)
	}
	popts := append([]sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}, c.extra...)
	tp := sdktrace.NewTracerProvider(popts...)
	return &Setup{exporter: exporter, tp: tp, sdk: tp}, nil
}

// otlpProtocol is the OTLP protocol the variables ask for.
func (c *setupConfig) otlpProtocol() (string, error) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := strings.TrimSpace(c.getenv(v)); p {
		case "":
			continue
		case "grpc", "http/protobuf":
			return p, nil
		default:
			return "", fmt.Errorf("%s is %q; amends speaks OTLP as grpc or http/protobuf: %w", v, clip(p), ErrInvalidConfig)
		}
	}
	return "http/protobuf", nil
}

// clip bounds a value quoted in an error.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
