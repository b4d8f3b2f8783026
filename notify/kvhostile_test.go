package notify

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// Finding 10: a dedup claim whose time is far in the future suppressed
// its key for ever (now minus that time is negative, always within the
// window). Such a claim is absent: the notification is sent, and the
// claim quarantined.
func TestADedupClaimInTheFutureIsTakenOver(t *testing.T) {
	js := natstest.New(t).JetStream()
	ctx := t.Context()
	q, err := quarantine.New(js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	kv, err := openDedup(ctx, js, 1, jetstream.MemoryStorage, kvstore.WithRecorder(q))
	require.NoError(t, err)
	n := &Notification{ID: "n-1", Type: TypeCreated}
	key := dedupKey("ops", keyOf(n, 10*time.Minute))
	_, err = js.Publish(ctx, "$KV."+DefaultDedupBucket+"."+key, []byte(`{"event":"ghost","at":9000000000000000}`))
	require.NoError(t, err)
	v, rev, at, err := claimKey(ctx, kv, "ops", n, 10*time.Minute, t0)
	require.NoError(t, err)
	assert.Equal(t, send, v, "the future claim is taken over")
	assert.NotZero(t, rev)
	assert.Equal(t, t0.UnixMilli(), at)
	all, err := q.All(ctx, quarantine.Query{Consumer: DefaultDedupBucket})
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Contains(t, all[0].Error, "at: ")
	assert.Contains(t, all[0].Error, "treated as absent")

	// A claim that is not JSON is taken over too, and a valid one within
	// the window still deduplicates.
	other := &Notification{ID: "n-2", Type: TypeCreated}
	_, err = js.Publish(ctx, "$KV."+DefaultDedupBucket+"."+dedupKey("ops", keyOf(other, time.Minute)), []byte(`not json`))
	require.NoError(t, err)
	v, _, _, err = claimKey(ctx, kv, "ops", other, time.Minute, t0)
	require.NoError(t, err)
	assert.Equal(t, send, v)
	v, _, _, err = claimKey(ctx, kv, "ops", n, 10*time.Minute, t0.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, send, v, "the holder sends again until delivered")
}

// Finding 10: a digest meta entry whose last digest is far in the future
// stopped every digest. It is absent: the digest is due.
func TestADigestMetaInTheFutureDoesNotStopDigests(t *testing.T) {
	js := natstest.New(t).JetStream()
	ctx := t.Context()
	q, err := quarantine.New(js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	kv, err := openDigest(ctx, js, 1, jetstream.MemoryStorage, kvstore.WithRecorder(q))
	require.NoError(t, err)
	require.NoError(t, updateGroup(ctx, kv, groupKey("shop/billing/charge", "Boom"), func(g *group) {
		g.Function, g.ErrorCode, g.Failures = "shop/billing/charge", "Boom", 2
	}))
	_, err = js.Publish(ctx, "$KV."+DefaultDigestBucket+"."+digestMeta, []byte(`{"last":9000000000000000}`))
	require.NoError(t, err)
	_, err = js.Publish(ctx, "$KV."+DefaultDigestBucket+".g_nothex", []byte(`{"function":"x"}`))
	require.NoError(t, err)
	note, _, ok, err := collectDigest(ctx, kv, time.Hour, t0)
	require.NoError(t, err)
	require.True(t, ok, "the digest is due")
	assert.Equal(t, []DigestGroup{{Function: "shop/billing/charge", ErrorCode: "Boom", State: DigestNew, Failures: 2}}, note.Digest)
	_, _, ok, err = collectDigest(ctx, kv, time.Hour, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "once per interval")
	all, err := q.All(ctx, quarantine.Query{Consumer: DefaultDigestBucket})
	require.NoError(t, err)
	assert.Len(t, all, 2, "the meta entry and the odd key")
}
