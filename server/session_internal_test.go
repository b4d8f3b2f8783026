package server

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	ss := newSessions(func() time.Time { return now })
	id, csrf := ss.create(principal{name: "bob", role: RoleOperator})
	assert.NotEqual(t, id, csrf)
	assert.Len(t, id, 43, "32 random bytes, base64url")
	s, ok := ss.lookup(id)
	assert.True(t, ok)
	assert.Equal(t, "bob", s.name)
	assert.True(t, s.checkCSRF(csrf))
	assert.False(t, s.checkCSRF(""), "an empty token never matches")
	assert.False(t, s.checkCSRF(csrf+"x"))
	_, ok = ss.lookup(id + "x")
	assert.False(t, ok)
	_, ok = ss.lookup(string(make([]byte, 200)))
	assert.False(t, ok, "an over-long id is refused before hashing")

	now = now.Add(SessionTTL - time.Millisecond)
	_, ok = ss.lookup(id)
	assert.True(t, ok, "alive until its TTL")
	now = now.Add(time.Millisecond)
	_, ok = ss.lookup(id)
	assert.False(t, ok, "expired at its TTL")
	assert.Empty(t, ss.byID, "an expired session is dropped")

	// Full: the oldest session makes room for a new one.
	first, _ := ss.create(principal{name: "first"})
	for i := 1; i < MaxSessions; i++ {
		now = now.Add(time.Microsecond)
		ss.create(principal{name: "other"})
	}
	assert.Len(t, ss.byID, MaxSessions)
	now = now.Add(time.Microsecond)
	last, _ := ss.create(principal{name: "last"})
	assert.Len(t, ss.byID, MaxSessions)
	_, ok = ss.lookup(first)
	assert.False(t, ok, "the oldest was dropped")
	_, ok = ss.lookup(last)
	assert.True(t, ok)
}

func TestSameOrigin(t *testing.T) {
	cases := []struct {
		origin, fetchSite string
		want              bool
	}{
		{"", "", true},
		{"http://amends.example:8080", "", true},
		{"https://AMENDS.example:8080", "same-origin", true},
		{"http://amends.example:8081", "", false},
		{"http://evil.example", "", false},
		{"null", "", false},
		{"file://", "", false},
		{"", "cross-site", false},
		{"", "same-site", false},
		{"", "none", true},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "http://amends.example:8080/api/v1/batch/prepare_compensation", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.fetchSite != "" {
			r.Header.Set("Sec-Fetch-Site", c.fetchSite)
		}
		assert.Equal(t, c.want, sameOrigin(r), "Origin %q, Sec-Fetch-Site %q", c.origin, c.fetchSite)
	}
}
