package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/server"
)

func TestListQuarantine(t *testing.T) {
	base := newEnv(t)
	q, err := quarantine.New(base.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	for i := range 5 {
		consumer := "amends-projection"
		if i == 4 {
			consumer = "amends_replay_shop"
		}
		require.NoError(t, q.Put(t.Context(), quarantine.Entry{Stream: base.stream, Seq: uint64(10 + i), Subject: fmt.Sprintf("amends.compensation.execution_failed.x%d", i),
			Consumer: consumer, Reason: quarantine.ReasonCorrupt, Error: "history does not load", Deliveries: 1, At: t0}))
	}
	e := base.with(t, func(c *server.Config) { c.Quarantine = q })

	var seqs []uint64
	path := "/api/v1/quarantine?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		r := e.do(t, "GET", path, viewerKey, nil)
		require.Equal(t, http.StatusOK, r.status, "a viewer lists the quarantine: %s", r.body)
		var page api.QuarantinePage
		r.json(t, &page)
		require.LessOrEqual(t, len(page.Entries), 2)
		for _, en := range page.Entries {
			seqs = append(seqs, en.Seq)
			assert.Equal(t, base.stream, en.Stream)
			assert.Equal(t, api.QuarantineCorrupt, en.Reason)
			assert.Equal(t, "history does not load", en.Error)
		}
		if page.Next == "" {
			break
		}
		path = "/api/v1/quarantine?limit=2&cursor=" + page.Next
	}
	assert.Equal(t, []uint64{10, 11, 12, 13, 14}, seqs)

	r := e.do(t, "GET", "/api/v1/quarantine?consumer=amends_replay_shop", viewerKey, nil)
	require.Equal(t, http.StatusOK, r.status)
	var page api.QuarantinePage
	r.json(t, &page)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, uint64(14), page.Entries[0].Seq)
	assert.Empty(t, page.Next)

	for query, field := range map[string]string{
		"limit=0":          "limit",
		"limit=501":        "limit",
		"cursor=x":         "cursor",
		"consumer=a.b":     "consumer",
		"status=FAILED":    "status",
		"limit=1&limit=2":  "limit",
		"consumer=a%00b":   "consumer",
		"cursor=-1":        "cursor",
		"consumer=a%20b":   "consumer",
		"consumer=orders*": "consumer",
	} {
		r := e.do(t, "GET", "/api/v1/quarantine?"+query, viewerKey, nil)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s is refused", query)
		assert.Equal(t, field, r.apiError(t).Details["field"], "%s: the error names the parameter: %s", query, r.body)
	}
	assert.Equal(t, http.StatusUnauthorized, e.do(t, "GET", "/api/v1/quarantine", "", nil).status)

	none := base.do(t, "GET", "/api/v1/quarantine", viewerKey, nil)
	assert.Equal(t, http.StatusNotFound, none.status, "a server without a quarantine says so")
}
