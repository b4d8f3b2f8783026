package tracing_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/amends-dev/amends/tracing"
)

var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
}

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		exporter string
		err      string
	}{
		{"nothing set: the global provider", nil, "none", ""},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, "none", ""},
		{"disabled wins", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, "none", ""},
		{"otlp defaults to http", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "otlp/http", ""},
		{"an endpoint alone means otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, "otlp/http", ""},
		{"traces endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, "otlp/http", ""},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, "otlp/grpc", ""},
		{"traces protocol wins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, "otlp/http", ""},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, "console", ""},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "", `OTEL_TRACES_EXPORTER is "zipkin"; amends exports traces to one of otlp, console or none`},
		{"unknown protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "", `OTEL_EXPORTER_OTLP_PROTOCOL is "http/json"; amends speaks OTLP as grpc or http/protobuf`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range otelVars {
				t.Setenv(v, "")
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			s, err := tracing.FromEnv(t.Context())
			if c.err != "" {
				require.ErrorIs(t, err, tracing.ErrInvalidConfig)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
			assert.Equal(t, c.exporter, s.Exporter())
			assert.Equal(t, c.exporter != "none", s.Enabled())
			if c.exporter == "none" {
				assert.Same(t, otel.GetTracerProvider(), s.TracerProvider(), "no exporter: the global provider")
				assert.NoError(t, s.Shutdown(t.Context()), "shutting down nothing is fine")
			}
		})
	}
}

// The console exporter writes the spans, with the service name, when the
// provider is shut down.
func TestFromEnvConsole(t *testing.T) {
	for _, v := range otelVars {
		t.Setenv(v, "")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	var out bytes.Buffer
	s, err := tracing.FromEnv(t.Context(), tracing.WithConsole(&out), tracing.WithServiceName("orders"))
	require.NoError(t, err)
	_, span := s.TracerProvider().Tracer("test").Start(t.Context(), "hello")
	span.End()
	require.NoError(t, s.Shutdown(t.Context()))
	assert.Contains(t, out.String(), `"Name":"hello"`)
	assert.Contains(t, out.String(), `"orders"`, "the resource names the service")
	require.NoError(t, s.Shutdown(t.Context()), "a second shutdown is harmless")
}
