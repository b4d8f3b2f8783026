package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

func TestErrorsCarryTheServersBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/records/x":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":"NotFound","message":"no ExecutionFailed record with id x"}`))
		default:
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("upstream down"))
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "t", nil)
	require.NoError(t, err)

	_, err = c.Get(t.Context(), "x")
	var ce *client.Error
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, http.StatusNotFound, ce.Status)
	assert.Equal(t, "NotFound", ce.Body.Code)
	assert.EqualError(t, err, "NotFound (404) on record x: no ExecutionFailed record with id x", "the code, status and record with the message (issue 30, item 15)")
	assert.Equal(t, "x", ce.RecordID)
	assert.Equal(t, "GET", ce.Method)
	assert.Equal(t, "/api/v1/records/x", ce.Path)

	_, err = c.Count(t.Context(), api.Filter{})
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "Bad Gateway", ce.Body.Code, "a body that is not an API error keeps the status")
	assert.Contains(t, err.Error(), "upstream down")
}

// The details of a refusal keep every digit of their numbers (they are
// json.Number, not float64) and read as whole numbers and times (issue
// 30, item 15).
func TestRefusalDetailsKeepTheirNumbers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"code":"IllegalState","message":"ExecutionFailed can not retry.","details":{"status":"PREPARED","retries":3,"maxRetries":3,` +
			`"timeoutAt":1796153149316,"nextRetryAt":9007199254740993,"recoverable":"RECOVERABLE","accepted":["force_prepare_compensation"]}}`))
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "", nil)
	require.NoError(t, err)
	_, err = c.Prepare(t.Context(), "rec/1", client.CommandOptions{})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "IllegalState (409) on record rec/1: ExecutionFailed can not retry.", err.Error())
	assert.Equal(t, json.Number("1796153149316"), ce.Body.Details["timeoutAt"], "not 1.796153149316e+12")
	at, ok := ce.Time("timeoutAt")
	require.True(t, ok)
	assert.Equal(t, int64(1796153149316), at.UnixMilli())
	n, ok := ce.Int("nextRetryAt")
	assert.True(t, ok)
	assert.Equal(t, int64(9007199254740993), n, "beyond float64's exact integers")
	r, _ := ce.Int("retries")
	assert.Equal(t, int64(3), r)
	assert.Equal(t, "PREPARED", ce.String("status"))
	assert.Equal(t, []string{"force_prepare_compensation"}, ce.Accepted())
	_, ok = ce.Int("status")
	assert.False(t, ok, "a string is not a number")
}

// A request carries the trace context of its ctx (issue 30, item 17).
func TestRequestsCarryTheCallersTrace(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
		_, _ = w.Write([]byte(`{"count": 1}`))
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "", nil)
	require.NoError(t, err)
	_, err = c.Count(t.Context(), api.Filter{})
	require.NoError(t, err)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	_, err = c.Count(ctx, api.Filter{})
	require.NoError(t, err)
	assert.Equal(t, []string{"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, got)
}

func TestNewRejectsBadAddresses(t *testing.T) {
	for _, addr := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		_, err := client.New(addr, "", nil)
		assert.Error(t, err, addr)
	}
}

// An answer that is not the API's JSON names the request, not Go types.
func TestUnexpectedAnswersNameNoGoTypes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/count":
			_, _ = w.Write([]byte(`{"count":"many"}`))
		case "/api/v1/summary":
			_, _ = w.Write([]byte(`{"total":`))
		default:
			_, _ = w.Write([]byte(`<html>`))
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "", nil)
	require.NoError(t, err)

	_, err = c.Count(t.Context(), api.Filter{})
	assert.EqualError(t, err, "GET "+srv.URL+"/api/v1/count: the answer is not the API's JSON: count is a JSON string, not what the API sends")
	_, err = c.Summary(t.Context(), api.Filter{})
	assert.EqualError(t, err, "GET "+srv.URL+"/api/v1/summary: the answer is not the API's JSON: the answer ended early")
	_, err = c.List(t.Context(), api.Query{})
	assert.EqualError(t, err, "GET "+srv.URL+"/api/v1/records: the answer is not the API's JSON: invalid JSON at byte 1")

	c, err = client.New("http://127.0.0.1:1", "", nil)
	require.NoError(t, err)
	_, err = c.List(t.Context(), api.Query{Limit: 5})
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "127.0.0.1:1/api/v1/records"), "the address once: %v", err)
}

func TestMessagesHideThePasswordOfTheAddress(t *testing.T) {
	c, err := client.New("http://ops:hunter2@127.0.0.1:1", "", nil)
	require.NoError(t, err)
	_, err = c.List(t.Context(), api.Query{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "http://ops:xxxxx@127.0.0.1:1/api/v1/records")

	_, err = client.New("ftp://ops:hunter2@x", "", nil)
	assert.NotContains(t, err.Error(), "hunter2")
}
