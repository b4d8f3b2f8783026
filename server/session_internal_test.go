package server

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func memorySessions(now *time.Time) (*sessions, *[]string) {
	var ended []string
	return newSessions(func() time.Time { return *now }, nil, func(k string) { ended = append(ended, k) }), &ended
}

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	ss, _ := memorySessions(&now)
	bob := principal{name: "bob", role: RoleOperator, via: viaToken}
	id, _, err := ss.create(t.Context(), bob)
	require.NoError(t, err)
	assert.Len(t, id, sessionIDLength, "32 random bytes, base64url")
	csrf := csrfOf(id)
	assert.NotEqual(t, id, csrf)
	s, ok := ss.lookup(t.Context(), id)
	assert.True(t, ok)
	assert.Equal(t, "bob", s.name)
	assert.True(t, checkCSRF(id, csrf))
	assert.False(t, checkCSRF(id, ""), "an empty token never matches")
	assert.False(t, checkCSRF(id, csrf+"x"))
	other, _, err := ss.create(t.Context(), bob)
	require.NoError(t, err)
	assert.False(t, checkCSRF(other, csrf), "each session has its own CSRF token")
	_, ok = ss.lookup(t.Context(), id[:len(id)-1]+"x")
	assert.False(t, ok)
	_, ok = ss.lookup(t.Context(), string(make([]byte, 200)))
	assert.False(t, ok, "an id of another shape is refused before hashing")

	now = now.Add(SessionTTL - time.Millisecond)
	_, ok = ss.lookup(t.Context(), id)
	assert.True(t, ok, "alive until its TTL")
	now = now.Add(time.Millisecond)
	_, ok = ss.lookup(t.Context(), id)
	assert.False(t, ok, "expired at its TTL")
	all, _ := ss.count("")
	assert.Equal(t, 1, all, "the expired session is dropped; the other, made at the same time, is dropped at its own lookup")

	// A token that expires before SessionTTL ends its sessions with it.
	short := principal{name: "carol", role: RoleViewer, via: viaToken, expires: now.Add(time.Hour)}
	_, sess, err := ss.create(t.Context(), short)
	require.NoError(t, err)
	assert.Equal(t, now.Add(time.Hour), sess.expires)
}

// A viewer who signs in 10 001 times used to sign every operator out: the
// server kept 10 000 sessions and dropped the oldest, whoever held it.
// Now a principal's sign-ins end only its own oldest sessions.
func TestSessionsPerPrincipalEvictOnlyTheirOwn(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	ss, ended := memorySessions(&now)
	operator := principal{name: "bob", role: RoleOperator, via: viaToken}
	viewer := principal{name: "alice", role: RoleViewer, via: viaToken}
	opID, _, err := ss.create(t.Context(), operator)
	require.NoError(t, err)
	var viewerIDs []string
	for range 10_001 {
		now = now.Add(time.Millisecond)
		id, _, err := ss.create(t.Context(), viewer)
		require.NoError(t, err)
		viewerIDs = append(viewerIDs, id)
	}
	_, ok := ss.lookup(t.Context(), opID)
	assert.True(t, ok, "the operator's session outlives any number of a viewer's sign-ins")
	all, mine := ss.count(viewer.key())
	assert.Equal(t, MaxSessionsPerPrincipal, mine, "the viewer keeps at most MaxSessionsPerPrincipal")
	assert.Equal(t, MaxSessionsPerPrincipal+1, all)
	_, ok = ss.lookup(t.Context(), viewerIDs[len(viewerIDs)-MaxSessionsPerPrincipal-1])
	assert.False(t, ok, "the viewer's oldest went")
	_, ok = ss.lookup(t.Context(), viewerIDs[len(viewerIDs)-MaxSessionsPerPrincipal])
	assert.True(t, ok, "its newest stay")
	assert.Len(t, *ended, 10_001-MaxSessionsPerPrincipal, "every evicted session's requests were ended")
	assert.NotContains(t, *ended, sessionKey(opID))
}

func TestSessionsRefuseBeyondTheirTotal(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	ss, _ := memorySessions(&now)
	for i := range MaxSessions {
		ss.addLocked(sessionKey(randomToken()), &session{principal: principal{name: "p" + strings.Repeat("x", i%7), via: viaToken}, created: now, expires: now.Add(SessionTTL)})
	}
	_, _, err := ss.create(t.Context(), principal{name: "late", via: viaToken})
	require.ErrorIs(t, err, errSessionsFull, "full: a new session is refused, none is dropped")
	now = now.Add(SessionTTL)
	_, _, err = ss.create(t.Context(), principal{name: "late", via: viaToken})
	require.NoError(t, err, "once the others expired there is room")
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
