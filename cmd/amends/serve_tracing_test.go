package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeRefusesAnUnknownTracesExporter(t *testing.T) {
	c := cli{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}}
	code := c.run(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	assert.Equal(t, exitUsage, code, "stderr:\n%s", c.stderr.String())
	assert.Contains(t, c.stderr.String(), `OTEL_TRACES_EXPORTER is "zipkin"; amends exports traces to one of otlp, console or none`)
	assert.NotContains(t, c.stderr.String(), "tracing: invalid configuration", "no sentinel text")
}

// With OTEL_TRACES_EXPORTER=console, serve's HTTP requests are spans
// written to standard error, flushed when serve stops.
func TestServeExportsTracesToTheConsole(t *testing.T) {
	c := cli{env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}}
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:0")
	resp, err := http.Get(r.info.HTTPURL + "/api/v1/records")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, exitOK, r.stop(t))
	assert.Contains(t, c.stderr.String(), "tracing enabled")
	assert.Contains(t, c.stderr.String(), `"Name":"GET /api/v1/records"`, "the request's span was exported")
}
