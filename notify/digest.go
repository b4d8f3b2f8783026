package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultDigestBucket is the KV bucket of digest state.
const DefaultDigestBucket = "amends_notify_digest"

// maxDigestGroups bounds the groups one digest reads and sends.
const maxDigestGroups = 1000

// The states of a digest group.
const (
	DigestNew          = "new"
	DigestStillFailing = "still_failing"
	DigestResolved     = "resolved"
	DigestRegressed    = "regressed"
)

// DigestGroup is one function × error code in a digest: its state and the
// failures and successes counted since the last digest (at least; a
// redelivered message may be counted twice).
type DigestGroup struct {
	Function  string `json:"function"`
	ErrorCode string `json:"errorCode"`
	State     string `json:"state"`
	Failures  uint64 `json:"failures"`
	Successes uint64 `json:"successes"`
}

// group is the stored state of a function × error code.
type group struct {
	Function  string `json:"function"`
	ErrorCode string `json:"errorCode"`
	Failures  uint64 `json:"failures"`
	Successes uint64 `json:"successes"`
	// Status is "" (never reported), "failing" or "resolved".
	Status string `json:"status,omitempty"`
}

const (
	statusFailing  = "failing"
	statusResolved = "resolved"
)

// transition is what a digest says of g, and g's status after it; ok is
// false when there is nothing to say. Pure.
func transition(g group) (DigestGroup, string, bool) {
	d := DigestGroup{Function: g.Function, ErrorCode: g.ErrorCode, Failures: g.Failures, Successes: g.Successes}
	switch {
	case g.Failures > 0 && g.Status == "":
		d.State = DigestNew
	case g.Failures > 0 && g.Status == statusResolved:
		d.State = DigestRegressed
	case g.Failures > 0:
		d.State = DigestStillFailing
	case g.Status == statusFailing && g.Successes > 0:
		d.State = DigestResolved
		return d, statusResolved, true
	case g.Status == statusFailing:
		d.State = DigestStillFailing
	default:
		return d, g.Status, false
	}
	return d, statusFailing, true
}

// digestSpec is the digest bucket.
func digestSpec(replicas int, storage jetstream.StorageType) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket: DefaultDigestBucket, Description: "amends: notification digest state per function and error code",
		History: 1, Replicas: max(replicas, 1), Storage: storage,
	}, MaxValue: 8 << 10}
}

// openDigest returns the digest bucket, creating it if missing.
func openDigest(ctx context.Context, js jetstream.JetStream, replicas int, storage jetstream.StorageType, opts ...kvstore.Option) (*kvstore.Store[digestEntry], error) {
	b, err := kvstore.Open(ctx, js, digestSpec(replicas, storage), opts...)
	if err != nil {
		return nil, fmt.Errorf("open the digest bucket %s: %w", DefaultDigestBucket, err)
	}
	return kvstore.For(b, digestCodec), nil
}

// digestEntry is a value of the digest bucket: a group (keys g_...) or
// the meta entry (key "meta").
type digestEntry struct {
	group *group
	meta  *digestMetaEntry
}

var digestCodec = kvstore.Codec[digestEntry]{
	Decode: decodeDigest,
	Encode: func(d digestEntry) ([]byte, error) {
		if d.meta != nil {
			return json.Marshal(d.meta)
		}
		return json.Marshal(d.group)
	},
}

var groupStatuses = []string{"", statusFailing, statusResolved}

// decodeDigest reads an entry of the digest bucket: the meta entry, whose
// time of the last digest is not negative (one more than a minute after
// now is treated as absent, so that a digest is due rather than never
// again; the entry is reported), or a group under a group key (groupKey),
// with a function and error code of bounded length and a known status.
func decodeDigest(e kvstore.Entry) (digestEntry, error) {
	if e.Key == digestMeta {
		var m digestMetaEntry
		if err := json.Unmarshal(e.Value, &m); err != nil {
			return digestEntry{}, kvstore.Invalid("", "not the digest's meta entry in JSON: %v", err)
		}
		if err := kvstore.Within("last", m.Last, e.Now, maxSkew); err != nil {
			return digestEntry{meta: &digestMetaEntry{}}, kvstore.Ignore("last", "%s", strings.TrimPrefix(err.Error(), "last: "))
		}
		return digestEntry{meta: &m}, nil
	}
	if !kvstore.IsHash("g_", e.Key) {
		return digestEntry{}, kvstore.Invalid("key", "is neither %s nor a group key (g_ and 40 hexadecimal digits)", digestMeta)
	}
	var g group
	if err := json.Unmarshal(e.Value, &g); err != nil {
		return digestEntry{}, kvstore.Invalid("", "not a digest group in JSON: %v", err)
	}
	if err := kvstore.Text("function", g.Function, 1024, true); err != nil {
		return digestEntry{}, err
	}
	if err := kvstore.Text("errorCode", g.ErrorCode, 1024, false); err != nil {
		return digestEntry{}, err
	}
	if err := kvstore.OneOf("status", g.Status, groupStatuses...); err != nil {
		return digestEntry{}, err
	}
	return digestEntry{group: &g}, nil
}

func groupKey(function, code string) string { return kvstore.Hash("g_", function, code) }

// updateGroup applies fn to the stored group with compare-and-set (the
// bucket's Change loop); a stored group that does not validate starts
// again from zero.
func updateGroup(ctx context.Context, kv *kvstore.Store[digestEntry], key string, fn func(*group)) error {
	_, _, err := kv.Change(ctx, key, func(cur kvstore.Current[digestEntry]) (digestEntry, kvstore.Action, error) {
		var g group
		if cur.Exists() && cur.Value.group != nil {
			g = *cur.Value.group
		}
		fn(&g)
		return digestEntry{group: &g}, kvstore.Write, nil
	})
	return err
}

// countDigest counts n's failure or success in its group.
func countDigest(ctx context.Context, kv *kvstore.Store[digestEntry], n *Notification) error {
	if n.Record == nil || (n.Type != TypeCreated && n.Type != TypeApplied && n.Type != TypeSucceeded) {
		return nil
	}
	f := n.Record.Function
	fn := f.ContextName + "/" + f.ProcessorName + "/" + f.Name
	code := n.Record.Error.ErrorCode
	return updateGroup(ctx, kv, groupKey(fn, code), func(g *group) {
		g.Function, g.ErrorCode = fn, code
		if n.Type == TypeSucceeded {
			g.Successes++
		} else {
			g.Failures++
		}
	})
}

const digestMeta = "meta"

type digestMetaEntry struct {
	Last int64 `json:"last"`
}

// collectDigest claims the digest of the interval ending at now, at most
// once per interval across restarts and servers (compare-and-set on the
// bucket's meta entry), and returns its notification and a commit
// function that resets the groups' counters once it is delivered. ok is
// false when no digest is due or there is nothing to report.
func collectDigest(ctx context.Context, kv *kvstore.Store[digestEntry], interval time.Duration, now time.Time) (*Notification, func(context.Context) error, bool, error) {
	e, rev, err := kv.Get(ctx, digestMeta)
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
	case errors.Is(err, kvstore.ErrInvalid):
		// A meta entry that does not validate is replaced: a digest is due.
	case err != nil:
		return nil, nil, false, err
	case e.meta != nil && now.UnixMilli()-e.meta.Last < interval.Milliseconds():
		return nil, nil, false, nil
	}
	type read struct {
		key string
		g   group
	}
	var groups []read
	err = kv.Scan(ctx, ">", func(k string, d digestEntry, _ uint64, err error) { // not ListKeys: groups being counted would be missed
		if err == nil && d.group != nil && len(groups) < maxDigestGroups {
			groups = append(groups, read{k, *d.group})
		}
	})
	if err != nil {
		return nil, nil, false, err
	}
	var out []DigestGroup
	var changed []read
	for _, r := range groups {
		if d, _, ok := transition(r.g); ok {
			out = append(out, d)
			changed = append(changed, r)
		}
	}
	if len(out) == 0 {
		return nil, nil, false, nil // nothing to say: the interval stays open
	}
	meta := digestEntry{meta: &digestMetaEntry{Last: now.UnixMilli()}}
	if rev == 0 {
		_, err = kv.Create(ctx, digestMeta, meta)
	} else {
		_, err = kv.Update(ctx, digestMeta, meta, rev)
	}
	if err != nil {
		return nil, nil, false, nil // another server took this interval
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Function != out[j].Function {
			return out[i].Function < out[j].Function
		}
		return out[i].ErrorCode < out[j].ErrorCode
	})
	n := &Notification{
		ID:   uuid.NewSHA1(namespace, []byte("digest\x00"+strconv.FormatInt(now.UnixMilli(), 10))).String(),
		Type: TypeDigest, Time: now.UnixMilli(), Digest: out,
	}
	commit := func(ctx context.Context) error {
		var errs []error
		for _, r := range changed {
			_, status, _ := transition(r.g)
			errs = append(errs, updateGroup(ctx, kv, r.key, func(g *group) {
				g.Function, g.ErrorCode = r.g.Function, r.g.ErrorCode
				g.Failures -= min(g.Failures, r.g.Failures)
				g.Successes -= min(g.Successes, r.g.Successes)
				g.Status = status
			}))
		}
		return errors.Join(errs...)
	}
	return n, commit, true, nil
}

// digestLoop sends a digest whenever one is due, checking every digest
// tick, until ctx ends.
func (n *Notifier) digestLoop(ctx context.Context) {
	wait.Every(ctx, n.opts.digestTick, func() {
		if _, err := n.SendDigest(ctx); err != nil && ctx.Err() == nil {
			n.opts.logger.Warn("notifier: digest not sent", "err", err)
		}
	})
}

// SendDigest sends the digest of the interval ending now (by the
// notifier's clock) to the digest endpoint if one is due and has something
// to report, and reports whether it sent one. At most one digest is sent
// per interval across restarts and servers. A digest whose delivery failed
// after the retry limit is recorded as a failure, and its counts are kept
// for the next one. Run calls it; tests call it directly.
func (n *Notifier) SendDigest(ctx context.Context) (bool, error) {
	kv := n.digestKV()
	if n.cfg.Digest == nil || kv == nil {
		return false, nil
	}
	note, commit, ok, err := collectDigest(ctx, kv, n.cfg.Digest.Interval.Duration, n.opts.clock.Now())
	if err != nil || !ok {
		return false, err
	}
	ep, _ := n.cfg.Endpoint(n.cfg.Digest.Endpoint)
	if err := n.deliver(ctx, ep, note); err != nil {
		if rerr := n.recordFailure(ctx, nil, note, ep, err); rerr != nil {
			return false, errors.Join(err, rerr)
		}
		return false, err
	}
	return true, commit(ctx)
}
