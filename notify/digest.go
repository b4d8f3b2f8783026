package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
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

// OpenDigest returns the digest bucket, creating it if missing.
func OpenDigest(ctx context.Context, js jetstream.JetStream, replicas int, storage jetstream.StorageType) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: DefaultDigestBucket, Description: "amends: notification digest state per function and error code",
		History: 1, Replicas: max(replicas, 1), Storage: storage,
	})
	if err != nil {
		return nil, fmt.Errorf("open the digest bucket %s: %w", DefaultDigestBucket, err)
	}
	return kv, nil
}

func groupKey(function, code string) string {
	sum := sha256.Sum256([]byte(function + "\x00" + code))
	return "g_" + hex.EncodeToString(sum[:20])
}

// updateGroup applies fn to the stored group with compare-and-set.
func updateGroup(ctx context.Context, kv jetstream.KeyValue, key string, fn func(*group)) error {
	for range 32 {
		var g group
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			rev = e.Revision()
			if json.Unmarshal(e.Value(), &g) != nil {
				g = group{}
			}
		}
		fn(&g)
		data, _ := json.Marshal(g)
		if rev == 0 {
			_, err = kv.Create(ctx, key, data)
		} else {
			_, err = kv.Update(ctx, key, data, rev)
		}
		if err == nil || !(errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err)) {
			return err
		}
	}
	return errors.New("digest group kept changing")
}

func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// countDigest counts n's failure or success in its group.
func countDigest(ctx context.Context, kv jetstream.KeyValue, n *Notification) error {
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
func collectDigest(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, interval time.Duration, now time.Time) (*Notification, func(context.Context) error, bool, error) {
	e, err := kv.Get(ctx, digestMeta)
	var rev uint64
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return nil, nil, false, err
	default:
		var m digestMetaEntry
		_ = json.Unmarshal(e.Value(), &m)
		if now.Sub(time.UnixMilli(m.Last)) < interval {
			return nil, nil, false, nil
		}
		rev = e.Revision()
	}
	keys, err := kvwatch.Keys(ctx, js, kv, ">") // not ListKeys: groups being counted would be missed
	if err != nil {
		return nil, nil, false, err
	}
	type read struct {
		key string
		g   group
	}
	var groups []read
	for _, k := range keys {
		if !strings.HasPrefix(k, "g_") || len(groups) >= maxDigestGroups {
			continue
		}
		ge, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		var g group
		if json.Unmarshal(ge.Value(), &g) == nil {
			groups = append(groups, read{k, g})
		}
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
	meta, _ := json.Marshal(digestMetaEntry{Last: now.UnixMilli()})
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
	t := time.NewTicker(n.opts.digestTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := n.SendDigest(ctx); err != nil && ctx.Err() == nil {
			n.opts.logger.Warn("notifier: digest not sent", "err", err)
		}
	}
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
	note, commit, ok, err := collectDigest(ctx, n.js, kv, n.cfg.Digest.Interval.Duration, n.opts.clock.Now())
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
