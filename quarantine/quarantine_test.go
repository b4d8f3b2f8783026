package quarantine_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/quarantine"
)

func TestPutListPages(t *testing.T) {
	js := natstest.New(t).JetStream()
	clock := fakeclock.At(1_700_000_000_000)
	q, err := quarantine.New(js, quarantine.WithMemoryStorage(), quarantine.WithClock(clock))
	require.NoError(t, err)
	ctx := t.Context()

	for i := range 7 {
		consumer := "proj"
		if i%2 == 1 {
			consumer = "replay"
		}
		require.NoError(t, q.Put(ctx, quarantine.Entry{Stream: "amends_compensation", Seq: uint64(i + 1), Subject: fmt.Sprintf("s.%d", i),
			Consumer: consumer, Reason: quarantine.ReasonCorrupt, Error: "bad", Deliveries: 1, At: int64(i)}))
	}
	// Quarantining a message again replaces its entry.
	require.NoError(t, q.Put(ctx, quarantine.Entry{Stream: "amends_compensation", Seq: 1, Subject: "s.0", Consumer: "proj", Reason: quarantine.ReasonRetriesExhausted}))

	var seqs []uint64
	var after uint64
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "paging must end")
		p, err := q.List(ctx, quarantine.Query{After: after, Limit: 3})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Entries), 3)
		for _, e := range p.Entries {
			seqs = append(seqs, e.Seq)
			assert.Greater(t, e.ID, after, "entries come after the cursor")
		}
		if p.Next == 0 {
			break
		}
		after = p.Next
	}
	assert.Equal(t, []uint64{2, 3, 4, 5, 6, 7, 1}, seqs, "oldest first; the re-quarantined message once, last")

	all, err := q.All(ctx, quarantine.Query{})
	require.NoError(t, err)
	var allSeqs []uint64
	for _, e := range all {
		allSeqs = append(allSeqs, e.Seq)
	}
	assert.Equal(t, seqs, allSeqs, "All pages through what List pages through")

	p, err := q.List(ctx, quarantine.Query{Consumer: "replay"})
	require.NoError(t, err)
	require.Len(t, p.Entries, 3)
	for _, e := range p.Entries {
		assert.Equal(t, "replay", e.Consumer)
		assert.Equal(t, quarantine.ReasonCorrupt, e.Reason)
		assert.Equal(t, "bad", e.Error)
	}
	assert.Zero(t, p.Next)

	assert.Equal(t, []quarantine.Count{
		{Consumer: "proj", Reason: quarantine.ReasonCorrupt, N: 4},
		{Consumer: "proj", Reason: quarantine.ReasonRetriesExhausted, N: 1},
		{Consumer: "replay", Reason: quarantine.ReasonCorrupt, N: 3},
	}, q.Counts())
}

func TestListRefusesBadQueries(t *testing.T) {
	q, err := quarantine.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	for _, query := range []quarantine.Query{{Limit: -1}, {Limit: quarantine.MaxLimit + 1}, {Consumer: "a.b"}, {Consumer: "a*"}} {
		_, err := q.List(t.Context(), query)
		require.ErrorIs(t, err, quarantine.ErrInvalidQuery, "query %+v", query)
	}
}

func TestListShowsForgedEntries(t *testing.T) {
	js := natstest.New(t).JetStream()
	q, err := quarantine.New(js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	require.NoError(t, q.Provision(t.Context()))
	_, err = js.Publish(t.Context(), quarantine.DefaultStream+".x.y.1", []byte("{not json"))
	require.NoError(t, err)
	p, err := q.List(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	require.Len(t, p.Entries, 1)
	assert.Equal(t, quarantine.DefaultStream+".x.y.1", p.Entries[0].Subject)
	assert.Contains(t, p.Entries[0].Error, "does not decode")
}

func TestPutRecreatesADeletedStream(t *testing.T) {
	js := natstest.New(t).JetStream()
	q, err := quarantine.New(js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	require.NoError(t, q.Put(t.Context(), quarantine.Entry{Stream: "s", Seq: 1, Consumer: "c", Reason: quarantine.ReasonCorrupt}))
	require.NoError(t, js.DeleteStream(t.Context(), quarantine.DefaultStream))
	require.NoError(t, q.Put(t.Context(), quarantine.Entry{Stream: "s", Seq: 2, Consumer: "c", Reason: quarantine.ReasonCorrupt}))
	p, err := q.List(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	require.Len(t, p.Entries, 1)
	assert.Equal(t, uint64(2), p.Entries[0].Seq)
}

func TestProvisionRefusesAnotherStream(t *testing.T) {
	js := natstest.New(t).JetStream()
	_, err := js.CreateStream(t.Context(), jetstreamConfig(quarantine.DefaultStream, "other.>"))
	require.NoError(t, err)
	q, err := quarantine.New(js)
	require.NoError(t, err)
	require.ErrorIs(t, q.Provision(t.Context()), quarantine.ErrIncompatibleStream)
}

func TestLogIsRateLimited(t *testing.T) {
	js := natstest.New(t).JetStream()
	clock := fakeclock.At(1_700_000_000_000)
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	q, err := quarantine.New(js, quarantine.WithMemoryStorage(), quarantine.WithClock(clock), quarantine.WithLogger(logger, 10*time.Second))
	require.NoError(t, err)
	put := func(seq uint64, reason quarantine.Reason) {
		t.Helper()
		require.NoError(t, q.Put(t.Context(), quarantine.Entry{Stream: "s", Seq: seq, Consumer: "c", Reason: reason}))
	}
	for i := range 50 {
		put(uint64(i+1), quarantine.ReasonCorrupt)
	}
	put(100, quarantine.ReasonUndecodable) // another reason has its own line
	assert.Equal(t, 2, strings.Count(buf.String(), "quarantined"), "one line per consumer and reason per interval:\n%s", buf.String())
	clock.Set(clock.Now().Add(10 * time.Second))
	put(200, quarantine.ReasonCorrupt)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[2], "alsoQuarantinedSinceLastLine=49", "the next line counts those left out")
}

func TestRetryBackoff(t *testing.T) {
	r := quarantine.Retry{First: time.Second, Max: 10 * time.Second, Deliveries: 5}
	for delivered, want := range map[uint64]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 1 << 40: 10 * time.Second} {
		assert.Equal(t, want, r.Delay(delivered), "delay after %d deliveries", delivered)
	}
	assert.False(t, r.Exhausted(4))
	assert.True(t, r.Exhausted(5))
	var zero quarantine.Retry
	assert.Equal(t, quarantine.DefaultRetry.Max, zero.Delay(1<<62))
	assert.True(t, zero.Exhausted(quarantine.DefaultRetry.Deliveries))
}

func TestNewRefusesBadOptions(t *testing.T) {
	js := natstest.New(t).JetStream()
	for name, opt := range map[string]quarantine.Option{
		"stream with a dot": quarantine.WithStream("a.b"),
		"no replicas":       quarantine.WithReplicas(0),
		"no entries":        quarantine.WithMaxEntries(0),
		"negative age":      quarantine.WithMaxAge(-time.Second),
		"nil logger":        quarantine.WithLogger(nil, 0),
		"nil clock":         quarantine.WithClock(nil),
		"unknown storage":   quarantine.WithStorage(7),
	} {
		_, err := quarantine.New(js, opt)
		require.ErrorIs(t, err, quarantine.ErrInvalidOption, name)
	}
	_, err := quarantine.New(nil)
	require.ErrorIs(t, err, quarantine.ErrInvalidOption)
}

func TestRecordKVKeepsBucketKeyRevisionAndReason(t *testing.T) {
	js := natstest.New(t).JetStream()
	var logs bytes.Buffer
	clock := fakeclock.At(1_700_000_000_000)
	q, err := quarantine.New(js, quarantine.WithMemoryStorage(), quarantine.WithClock(clock),
		quarantine.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)), time.Minute))
	require.NoError(t, err)
	ctx := t.Context()
	cause := fmt.Errorf("bucket amends_rules key r-ü revision 7: key: not a rule id")
	require.NoError(t, q.RecordKV(ctx, "amends_rules", "r-ü", 7, cause))
	require.NoError(t, q.RecordKV(ctx, "amends_rules", "r-ü", 7, cause), "the same revision again replaces the entry")
	require.NoError(t, q.RecordKV(ctx, "amends_releases", "c2hvcA.UHJvamVjdG9y", 3, fmt.Errorf("step: must be from 0 to 64, got -1")))

	all, err := q.All(ctx, quarantine.Query{})
	require.NoError(t, err)
	require.Len(t, all, 2)
	e := all[0]
	e.ID = 0
	assert.Equal(t, quarantine.Entry{Kind: quarantine.KindKV, Bucket: "amends_rules", Key: "r-ü", Stream: "KV_amends_rules", Seq: 7,
		Subject: "$KV.amends_rules.r-ü", Consumer: "amends_rules", Reason: quarantine.ReasonInvalidEntry, Error: cause.Error(), At: 1_700_000_000_000}, e)

	byBucket, err := q.All(ctx, quarantine.Query{Consumer: "amends_releases"})
	require.NoError(t, err)
	require.Len(t, byBucket, 1, "the bucket is the consumer to filter by")
	assert.Equal(t, uint64(3), byBucket[0].Seq)

	assert.Contains(t, q.Counts(), quarantine.Count{Consumer: "amends_rules", Reason: quarantine.ReasonInvalidEntry, N: 2})
	assert.Equal(t, 1, strings.Count(logs.String(), "bucket=amends_rules"), "logged once per interval: %s", logs.String())
	assert.Contains(t, logs.String(), "invalid KV entry quarantined and skipped")
}
