package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultDedupBucket is the KV bucket of dedup claims.
const DefaultDedupBucket = "amends_notify_dedup"

// dedupTTL is the bucket's TTL: longer than the longest window, so a claim
// outlives its window.
const dedupTTL = MaxDedupWindow + time.Hour

// OpenDedup returns the dedup bucket, creating it if missing.
func OpenDedup(ctx context.Context, js jetstream.JetStream, replicas int, storage jetstream.StorageType) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: DefaultDedupBucket, Description: "amends: notification dedup claims per endpoint and key",
		TTL: dedupTTL, History: 1, Replicas: max(replicas, 1), Storage: storage,
	})
	if err != nil {
		return nil, fmt.Errorf("open the dedup bucket %s: %w", DefaultDedupBucket, err)
	}
	return kv, nil
}

// claim is a dedup entry: the notification that holds the key since At
// (epoch ms), and whether it was delivered.
type claim struct {
	Event     string `json:"event"`
	At        int64  `json:"at"`
	Delivered bool   `json:"delivered,omitempty"`
}

// verdict is what the dedup bucket says about a delivery.
type verdict int

const (
	send      verdict = iota // claimed: send it
	delivered                // this notification was delivered already
	duplicate                // another notification holds the key in its window
)

// keyOf is n's dedup key, or its id when dedup is off (window 0): then the
// claim only remembers the delivery.
func keyOf(n *Notification, window time.Duration) string {
	if window <= 0 {
		return n.ID
	}
	return n.DedupKey()
}

func dedupKey(endpoint, key string) string {
	sum := sha256.Sum256([]byte(endpoint + "\x00" + key))
	return "d_" + hex.EncodeToString(sum[:20])
}

// claimKey decides whether n goes to endpoint: a key held by another
// notification within window is a duplicate; the holder itself sends
// (again, after a redelivery) until it marked the key delivered. It
// returns the claim's revision and time for markDelivered.
func claimKey(ctx context.Context, kv jetstream.KeyValue, endpoint string, n *Notification, window time.Duration, now time.Time) (verdict, uint64, int64, error) {
	k := dedupKey(endpoint, keyOf(n, window))
	mine, _ := json.Marshal(claim{Event: n.ID, At: now.UnixMilli()})
	for range 4 {
		rev, err := kv.Create(ctx, k, mine)
		if err == nil {
			return send, rev, now.UnixMilli(), nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, 0, 0, err
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return 0, 0, 0, err
		}
		var c claim
		if json.Unmarshal(e.Value(), &c) != nil {
			c = claim{} // a damaged claim is taken over
		}
		switch {
		case c.Event == n.ID && c.Delivered:
			return delivered, e.Revision(), c.At, nil
		case c.Event == n.ID:
			return send, e.Revision(), c.At, nil
		case now.Sub(time.UnixMilli(c.At)) < window && c.Event != "":
			return duplicate, 0, 0, nil
		}
		rev, err = kv.Update(ctx, k, mine, e.Revision())
		if err == nil {
			return send, rev, now.UnixMilli(), nil
		}
		// lost a race with another claimer: look again
	}
	return 0, 0, 0, fmt.Errorf("dedup key of %s kept changing", endpoint)
}

// markDelivered records that n was delivered to endpoint, so a redelivery
// of its message does not send it again.
func markDelivered(ctx context.Context, kv jetstream.KeyValue, endpoint string, n *Notification, window time.Duration, rev uint64, at int64) error {
	data, _ := json.Marshal(claim{Event: n.ID, At: at, Delivered: true})
	_, err := kv.Update(ctx, dedupKey(endpoint, keyOf(n, window)), data, rev)
	return err
}

// releaseKey gives up n's claim after its delivery failed for good, so the
// next notification with the key is sent rather than dropped.
func releaseKey(ctx context.Context, kv jetstream.KeyValue, endpoint string, n *Notification, window time.Duration, rev uint64) error {
	return kv.Delete(ctx, dedupKey(endpoint, keyOf(n, window)), jetstream.LastRevision(rev))
}
