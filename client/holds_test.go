package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// Each hold and replay method sends its route, query and body, and
// decodes the answer.
func TestHoldAndReplayMethods(t *testing.T) {
	type call struct{ method, uri, body string }
	var (
		mu    sync.Mutex
		calls []call
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.Method, r.URL.RequestURI(), string(b)})
		mu.Unlock()
		switch {
		case r.URL.Path == "/api/v1/holds":
			_ = json.NewEncoder(w).Encode(api.HoldPage{Holds: []api.HoldSummary{{Key: "k", Held: 2}}})
		case r.URL.Path == "/api/v1/replays" || r.URL.Path == "/api/v1/replays/r-1":
			if r.Method == http.MethodPost {
				w.WriteHeader(http.StatusCreated)
				_ = json.NewEncoder(w).Encode(api.ReplayStarted{Created: true, Replay: &api.Replay{ID: "r-1"}})
				return
			}
			_ = json.NewEncoder(w).Encode(api.Replay{ID: "r-1", Status: api.ReplayDone})
		case r.URL.Path == "/api/v1/holds/shop.P.f.order.by0x/release":
			_ = json.NewEncoder(w).Encode(api.ReleasePlan{DryRun: true, Commands: []string{"apply_execution_success"}})
		default:
			_ = json.NewEncoder(w).Encode(api.Hold{Context: "shop"})
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "t", nil)
	require.NoError(t, err)
	ctx := t.Context()

	page, err := c.Holds(ctx, api.HoldQuery{Context: "shop", Processor: "P", Function: "f", Limit: 5})
	require.NoError(t, err)
	assert.Equal(t, 2, page.Holds[0].Held)
	h, err := c.Hold(ctx, "shop.P.f.order.by0x")
	require.NoError(t, err)
	assert.Equal(t, "shop", h.Context)
	plan, err := c.ReleaseHold(ctx, "shop.P.f.order.by0x", "fixed", true)
	require.NoError(t, err)
	assert.True(t, plan.DryRun)
	_, err = c.SkipHeld(ctx, "shop.P.f.order.by0x", "evt-2", "dup", false)
	require.NoError(t, err)
	started, err := c.StartReplay(ctx, api.ReplayStart{ID: "r-1", Context: "shop", Processor: "P", Function: "f", FromSeq: 1, ToSeq: 9, Reason: "r"})
	require.NoError(t, err)
	assert.True(t, started.Created)
	r, err := c.Replay(ctx, "r-1")
	require.NoError(t, err)
	assert.Equal(t, api.ReplayDone, r.Status)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []call{
		{"GET", "/api/v1/holds?context=shop&function=f&limit=5&processor=P", ""},
		{"GET", "/api/v1/holds/shop.P.f.order.by0x", ""},
		{"POST", "/api/v1/holds/shop.P.f.order.by0x/release", `{"reason":"fixed","dryRun":true}`},
		{"POST", "/api/v1/holds/shop.P.f.order.by0x/skip", `{"reason":"dup","eventId":"evt-2"}`},
		{"POST", "/api/v1/replays", `{"id":"r-1","context":"shop","processor":"P","function":"f","fromSeq":1,"toSeq":9,"reason":"r"}`},
		{"GET", "/api/v1/replays/r-1", ""},
	}, calls)
}
