package client_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/server"
)

// recording is the server's read side, remembering what the server parsed
// from each request before the index answers.
type recording struct {
	server.Queries
	mu      sync.Mutex
	query   api.Query
	filters []api.Filter
}

func (r *recording) List(q api.Query) (api.Page, error) {
	r.mu.Lock()
	r.query = q
	r.mu.Unlock()
	return api.Page{Items: []api.Item{}}, nil
}

func (r *recording) Count(f api.Filter) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.filters = append(r.filters, f)
	return 0, nil
}

func (r *recording) Summary(f api.Filter) (api.Summary, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.filters = append(r.filters, f)
	return api.Summary{}, nil
}

// recordingQuarantine remembers the quarantine query the server parsed.
type recordingQuarantine struct {
	mu    sync.Mutex
	query quarantine.Query
}

func (r *recordingQuarantine) List(_ context.Context, q quarantine.Query) (quarantine.Page, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.query = q
	return quarantine.Page{}, nil
}

// requireEveryField fails if a field of v (a struct) is zero, except
// those named: a field added to the query and not encoded fails here.
func requireEveryField(t *testing.T, v any, except ...string) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if !contains(except, name) {
			require.False(t, rv.Field(i).IsZero(), "the test sets every field of %s; %s is zero", rv.Type().Name(), name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// What the client encodes is what the server parses, for every field of
// a list query, a filter and a quarantine query.
func TestQueryEncodingRoundTripsThroughTheServersParser(t *testing.T) {
	s := newStack(t)
	rec := &recording{Queries: s.index}
	rq := &recordingQuarantine{}
	s.cfg.Queries = rec
	s.cfg.Quarantine = rq
	s.serve(t)
	c := s.client(t)

	from := time.Date(2026, 11, 30, 8, 0, 0, 123_456_789, time.UTC)
	f := api.Filter{
		ID: "rec-1", IDPrefix: "rec-", EventID: "evt 1/ü?&=", AggregateContext: "shop", AggregateType: "order", AggregateID: "o+1 %2F",
		FunctionContext: "order", Processor: "Mailer", Function: "onOrderPlaced", FunctionKind: aggregate.KindStateEvent,
		Status: aggregate.StatusPrepared, Recoverable: aggregate.Unrecoverable, ErrorCode: "Timeout", Fingerprint: "fp1-0123456789abcdef",
		ExecuteAtFrom: from, ExecuteAtTo: from.Add(36 * time.Hour), NextRetryAtFrom: from.Add(time.Hour), NextRetryAtTo: from.Add(48 * time.Hour), MinRetries: 3, View: aggregate.ViewNextRetry,
	}
	requireEveryField(t, f, "Now")
	for _, q := range []api.Query{
		{Filter: f, Sort: api.Sort{Field: api.SortRetries, Desc: true}, Limit: api.MaxLimit, Cursor: "c-1"},
		{Filter: f, Sort: api.Sort{Field: api.SortNextRetryAt}, Limit: 1},
		{Sort: api.Sort{Desc: true}},
		{},
	} {
		if q.Filter == f && q.Sort.Desc {
			requireEveryField(t, q)
			requireEveryField(t, q.Sort)
		}
		_, err := c.List(t.Context(), q)
		require.NoError(t, err, "list %+v", q)
		rec.mu.Lock()
		got := rec.query
		rec.mu.Unlock()
		assert.Equal(t, q, got, "the server parses the query the client encoded (%s)", q.Values().Encode())
	}

	for _, filter := range []api.Filter{f, {Status: aggregate.StatusFailed}, {}} {
		_, err := c.Count(t.Context(), filter)
		require.NoError(t, err)
		_, err = c.Summary(t.Context(), filter)
		require.NoError(t, err)
		rec.mu.Lock()
		got := rec.filters
		rec.filters = nil
		rec.mu.Unlock()
		assert.Equal(t, []api.Filter{filter, filter}, got, "count and summary parse the filter the client encoded")
	}

	// Times the RFC 3339 layout cannot hold go as epoch milliseconds.
	far := time.UnixMilli(253_402_300_800_123) // 10000-01-01
	_, err := c.Count(t.Context(), api.Filter{ExecuteAtTo: far})
	require.NoError(t, err)
	assert.Equal(t, far.UnixMilli(), rec.filters[0].ExecuteAtTo.UnixMilli())

	qq := api.QuarantineQuery{Consumer: "amends-projection", Cursor: "42", Limit: 7}
	requireEveryField(t, qq)
	_, err = c.Quarantine(t.Context(), qq)
	require.NoError(t, err)
	rq.mu.Lock()
	assert.Equal(t, quarantine.Query{Consumer: "amends-projection", After: 42, Limit: 7}, rq.query)
	rq.mu.Unlock()

	_, err = c.List(t.Context(), api.Query{Filter: api.Filter{Now: from}})
	assert.ErrorIs(t, err, client.ErrInvalidRequest, "a list has no now")
	assert.EqualError(t, err, "the filter's Now is only for batches: lists, counts and summaries evaluate views at the server's clock; leave it zero")
}
