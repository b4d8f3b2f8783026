package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/kvstore"
)

// DefaultDedupBucket is the KV bucket of dedup claims.
const DefaultDedupBucket = "amends_notify_dedup"

// dedupTTL is the bucket's TTL: longer than the longest window, so a claim
// outlives its window.
const dedupTTL = MaxDedupWindow + time.Hour

// maxSkew is how far after now a stored time may be before it is taken
// for a time no server wrote: clocks differ by less.
const maxSkew = time.Minute

// dedupSpec is the dedup bucket: its TTL must outlive the longest window;
// it is a cache of deliveries, which Repair may recreate.
func dedupSpec(replicas int, storage jetstream.StorageType) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket: DefaultDedupBucket, Description: "amends: notification dedup claims per endpoint and key",
		TTL: dedupTTL, History: 1, Replicas: max(replicas, 1), Storage: storage,
	}, MaxValue: 4 << 10, Disposable: true, Match: []kvstore.Setting{kvstore.SettingTTL}}
}

// openDedup returns the dedup bucket, creating it if missing and bringing
// its TTL to the one it needs.
func openDedup(ctx context.Context, js jetstream.JetStream, replicas int, storage jetstream.StorageType, opts ...kvstore.Option) (*kvstore.Store[claim], error) {
	spec := dedupSpec(replicas, storage)
	if _, err := kvstore.Repair(ctx, js, spec, false); err != nil {
		return nil, fmt.Errorf("open the dedup bucket %s: %w", DefaultDedupBucket, err)
	}
	b, err := kvstore.Open(ctx, js, spec, opts...)
	if err != nil {
		return nil, fmt.Errorf("open the dedup bucket %s: %w", DefaultDedupBucket, err)
	}
	return kvstore.For(b, claimCodec), nil
}

// claim is a dedup entry: the notification that holds the key since At
// (epoch ms), and whether it was delivered.
type claim struct {
	Event     string `json:"event"`
	At        int64  `json:"at"`
	Delivered bool   `json:"delivered,omitempty"`
}

var claimCodec = kvstore.Codec[claim]{Decode: decodeClaim}

// decodeClaim reads a dedup claim: the key is a dedup key (dedupKey), the
// event a notification id, the time not negative. A time more than a
// minute after now is treated as absent, so that such a claim (which no
// server wrote) is taken over instead of suppressing the key for ever;
// the entry is reported.
func decodeClaim(e kvstore.Entry) (claim, error) {
	if !kvstore.IsHash("d_", e.Key) {
		return claim{}, kvstore.Invalid("key", "is not a dedup key (d_ and 40 hexadecimal digits)")
	}
	var c claim
	if err := json.Unmarshal(e.Value, &c); err != nil {
		return claim{}, kvstore.Invalid("", "not a dedup claim in JSON: %v", err)
	}
	if err := kvstore.Text("event", c.Event, 256, true); err != nil {
		return claim{}, err
	}
	if err := kvstore.Within("at", c.At, e.Now, maxSkew); err != nil {
		return claim{}, kvstore.Ignore("at", "%s", strings.TrimPrefix(err.Error(), "at: "))
	}
	return c, nil
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

func dedupKey(endpoint, key string) string { return kvstore.Hash("d_", endpoint, key) }

// claimKey decides whether n goes to endpoint: a key held by another
// notification within window is a duplicate; the holder itself sends
// (again, after a redelivery) until it marked the key delivered. It
// returns the claim's revision and time for markDelivered.
func claimKey(ctx context.Context, kv *kvstore.Store[claim], endpoint string, n *Notification, window time.Duration, now time.Time) (verdict, uint64, int64, error) {
	k := dedupKey(endpoint, keyOf(n, window))
	mine := claim{Event: n.ID, At: now.UnixMilli()}
	v, at := send, mine.At
	_, rev, err := kv.Change(ctx, k, func(cur kvstore.Current[claim]) (claim, kvstore.Action, error) {
		c := cur.Value // the zero claim when there is none, or none that validates: taken over
		switch {
		case cur.Exists() && c.Event == n.ID && c.Delivered:
			v, at = delivered, c.At
			return c, kvstore.Keep, nil
		case cur.Exists() && c.Event == n.ID:
			v, at = send, c.At
			return c, kvstore.Keep, nil
		case cur.Exists() && c.Event != "" && now.UnixMilli()-c.At < window.Milliseconds():
			v = duplicate
			return c, kvstore.Keep, nil
		}
		v, at = send, mine.At
		return mine, kvstore.Write, nil
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("dedup key of %s: %w", endpoint, err)
	}
	if v == duplicate {
		return duplicate, 0, 0, nil
	}
	return v, rev, at, nil
}

// markDelivered records that n was delivered to endpoint, so a redelivery
// of its message does not send it again.
func markDelivered(ctx context.Context, kv *kvstore.Store[claim], endpoint string, n *Notification, window time.Duration, rev uint64, at int64) error {
	_, err := kv.Update(ctx, dedupKey(endpoint, keyOf(n, window)), claim{Event: n.ID, At: at, Delivered: true}, rev)
	return err
}

// releaseKey gives up n's claim after its delivery failed for good, so the
// next notification with the key is sent rather than dropped.
func releaseKey(ctx context.Context, kv *kvstore.Store[claim], endpoint string, n *Notification, window time.Duration, rev uint64) error {
	return kv.Delete(ctx, dedupKey(endpoint, keyOf(n, window)), rev)
}
