package audit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/internal/natstest"
)

func open(t *testing.T) (*audit.Log, jetstream.JetStream) {
	t.Helper()
	_, js := natstest.New(t).Connect()
	l, err := audit.Open(t.Context(), js, audit.Config{Storage: jetstream.MemoryStorage, Now: func() time.Time { return time.UnixMilli(1_000) }})
	require.NoError(t, err)
	return l, js
}

func TestRecordAndQuery(t *testing.T) {
	l, _ := open(t)
	for _, e := range []api.AuditEntry{
		{Time: 10, Kind: api.AuditAuthFailure, Client: "203.0.113.7", Reason: "unknown token"},
		{Time: 20, Kind: api.AuditSignIn, Actor: "alice", Role: "viewer"},
		{Time: 30, Kind: api.AuditEventRead, Actor: "alice", Record: "r1", Event: "e1"},
		{Time: 40, Kind: api.AuditEventRead, Actor: "bob.smith@example.com", Record: "r2", Event: "e2"},
		{Kind: api.AuditSignOut, Actor: "alice"},
	} {
		require.NoError(t, l.Record(t.Context(), e))
	}
	all, err := l.Query(t.Context(), audit.Query{})
	require.NoError(t, err)
	require.Len(t, all.Entries, 5)
	assert.Equal(t, int64(1_000), all.Entries[4].Time, "a zero time is now")
	assert.Positive(t, all.Entries[0].Seq)

	reads, err := l.Query(t.Context(), audit.Query{Kind: api.AuditEventRead})
	require.NoError(t, err)
	assert.Len(t, reads.Entries, 2)
	byActor, err := l.Query(t.Context(), audit.Query{Actor: "bob.smith@example.com"})
	require.NoError(t, err)
	require.Len(t, byActor.Entries, 1, "an actor with dots is one subject token")
	assert.Equal(t, "r2", byActor.Entries[0].Record)
	byRecord, err := l.Query(t.Context(), audit.Query{Record: "r1"})
	require.NoError(t, err)
	assert.Len(t, byRecord.Entries, 1)
	inTime, err := l.Query(t.Context(), audit.Query{From: 20, To: 30})
	require.NoError(t, err)
	assert.Len(t, inTime.Entries, 2)

	page, err := l.Query(t.Context(), audit.Query{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Entries, 2)
	require.NotZero(t, page.Next)
	rest, err := l.Query(t.Context(), audit.Query{After: page.Next, Limit: 10})
	require.NoError(t, err)
	assert.Len(t, rest.Entries, 3)
	assert.Zero(t, rest.Next)

	for _, q := range []audit.Query{{Limit: -1}, {Limit: audit.MaxLimit + 1}, {Kind: "nope"}, {From: 5, To: 4}} {
		_, err := l.Query(t.Context(), q)
		assert.ErrorIs(t, err, audit.ErrInvalidQuery, "%+v", q)
	}
	assert.Error(t, l.Record(t.Context(), api.AuditEntry{Kind: "nope"}))
}

// What a client sent is cut and made printable before it is stored, and
// what is read back is checked: a message written past amends is skipped
// and counted, never shown.
func TestEntriesAreBoundedAndValidated(t *testing.T) {
	l, js := open(t)
	require.NoError(t, l.Record(t.Context(), api.AuditEntry{Kind: api.AuditAuthFailure, Reason: strings.Repeat("x", 5000) + "\u202e", Actor: "a\x1bb"}))
	for _, forged := range []string{
		`not json`,
		`{"time":5,"kind":"root_login"}`,
		`{"time":0,"kind":"sign_in"}`,
		`{"time":5,"kind":"sign_in","actor":"evil\u202e"}`,
		`{"time":5,"kind":"sign_in","reason":"` + strings.Repeat("y", 600) + `"}`,
	} {
		_, err := js.Publish(t.Context(), audit.SubjectPrefix+"sign_in.~", []byte(forged))
		require.NoError(t, err)
	}
	page, err := l.Query(t.Context(), audit.Query{})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	assert.Equal(t, 5, page.Skipped)
	e := page.Entries[0]
	assert.LessOrEqual(t, len(e.Reason), audit.MaxReasonBytes)
	assert.NotContains(t, e.Reason, "\u202e")
	assert.Equal(t, "a\uFFFDb", e.Actor)
}

func TestOpenRefusesAnotherStream(t *testing.T) {
	_, js := natstest.New(t).Connect()
	_, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: audit.DefaultStream, Subjects: []string{"other.>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	_, err = audit.Open(t.Context(), js, audit.Config{Storage: jetstream.MemoryStorage})
	require.ErrorIs(t, err, audit.ErrIncompatibleStream)
}
