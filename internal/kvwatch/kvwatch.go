// Package kvwatch reads the initial values of a JetStream KV watch
// completely.
//
// A KeyWatcher signals "all initial values delivered" with a nil entry once
// it has received as many messages as its consumer had pending when it was
// created. When keys are written while the watch starts, the messages it
// counted are replaced by newer ones (a bucket keeps few revisions per
// key) and the signal comes early: keys being updated at that moment are
// missing from a listing that stops there. The pending count in each
// entry (Delta) lags behind concurrent writes too, so it cannot tell the
// end either.
//
// Initial reads a watch of the whole history instead
// (jetstream.IncludeHistory; a bucket of one revision per key holds
// nothing else) until it has delivered the last message the stream leader
// has on the watched keys. A message is only removed once a newer one
// replaces it, and the watch delivers in stream order, so every key's
// value as of the leader's answer has then been delivered.
package kvwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrClosed is returned when the watch closes before its initial values
// were read.
var ErrClosed = errors.New("the watch closed before its initial values were read")

// Initial passes w's entries to apply, in revision order, until every value
// of kv's keys matching pattern (as given to Watch; ">" for WatchAll)
// as of a moment after the call has been delivered, deletions included.
// w must be created with jetstream.IncludeHistory and without
// IgnoreDeletes (a dropped deletion can be the end). Later entries stay in
// w for the caller. It asks the stream leader for the last sequence on
// the keys once, and once more each time the watch has caught up with the
// previous answer while keys changed. It returns ctx's error if ctx ends
// first, ErrClosed if the watch closes, and the request's error if the
// leader cannot be asked. apply runs on the caller's goroutine.
func Initial(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, pattern string, w jetstream.KeyWatcher, apply func(jetstream.KeyValueEntry)) error {
	return initial(ctx, w, 0, apply, func(ctx context.Context) (uint64, error) { return lastSeq(ctx, js, kv.Bucket(), pattern) })
}

// initial reads w until it has delivered the sequence last returns, asked
// again each time it caught up. If last has no sequence to give
// (errNoStreamInfo), the watch's own signal is all there is.
// after is the revision the watch resumes after (0: it reads from the
// start).
func initial(ctx context.Context, w jetstream.KeyWatcher, after uint64, apply func(jetstream.KeyValueEntry), last func(context.Context) (uint64, error)) error {
	delivered := after
	mark, err := last(ctx)
	bySignal := errors.Is(err, errNoStreamInfo)
	if err != nil && !bySignal {
		return err
	}
	for {
		if !bySignal && delivered >= mark {
			now, err := last(ctx)
			if err != nil {
				return err
			}
			if now <= delivered {
				return nil
			}
			mark = now
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return ErrClosed
			}
			if e == nil {
				if bySignal {
					return nil
				}
				continue // the watch's own signal, possibly early
			}
			apply(e)
			delivered = max(delivered, e.Revision())
		}
	}
}

// InitialAll is Initial for a watch of every key of kv (WatchAll with
// jetstream.IncludeHistory): the last sequence of the bucket's stream,
// from its info, which the stream leader answers, is the last message on
// the watched keys, so it needs no JetStream handle.
func InitialAll(ctx context.Context, kv jetstream.KeyValue, w jetstream.KeyWatcher, apply func(jetstream.KeyValueEntry)) error {
	return InitialAllAfter(ctx, kv, w, 0, apply)
}

// InitialAllAfter is InitialAll for a watch that resumes after revision
// after (WatchAll with jetstream.IncludeHistory and
// jetstream.ResumeFromRevision(after+1)): it delivers every change of the
// bucket since that revision, deletions included, up to the stream's last
// sequence as of a moment after the call, and returns at once if there is
// none.
func InitialAllAfter(ctx context.Context, kv jetstream.KeyValue, w jetstream.KeyWatcher, after uint64, apply func(jetstream.KeyValueEntry)) error {
	last := func(ctx context.Context) (uint64, error) {
		st, err := kv.Status(ctx)
		if err != nil {
			return 0, fmt.Errorf("read the last revision of bucket %s: %w", kv.Bucket(), err)
		}
		info, ok := st.(interface{ StreamInfo() *jetstream.StreamInfo })
		if !ok || info.StreamInfo() == nil {
			return 0, errNoStreamInfo
		}
		return info.StreamInfo().State.LastSeq, nil
	}
	return initial(ctx, w, after, apply, last)
}

// InitialFilteredAfter is Initial for a watch of the keys matching any of
// patterns (WatchFiltered with jetstream.IncludeHistory, and
// jetstream.ResumeFromRevision(after+1) when after is not 0): it reads
// until it has delivered the last message on any of them as the stream
// leader had it when asked, once (one request a pattern), after w was
// created: every key's value as of then has been delivered, and later
// changes follow in w. It asks once, not again each time it catches up:
// with many patterns the requests take long enough that keys written
// at a steady rate would keep it reading for ever.
func InitialFilteredAfter(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, patterns []string, w jetstream.KeyWatcher, after uint64, apply func(jetstream.KeyValueEntry)) error {
	var mark uint64
	asked := false
	last := func(ctx context.Context) (uint64, error) {
		if asked {
			return mark, nil
		}
		for _, p := range patterns {
			seq, err := lastSeq(ctx, js, kv.Bucket(), p)
			if err != nil {
				return 0, err
			}
			mark = max(mark, seq)
		}
		asked = true
		return mark, nil
	}
	return initial(ctx, w, after, apply, last)
}

// Range passes to apply, in revision order, the last change of every key
// of kv whose last change has a revision in [from, to] (deletions
// included), at most limit of them, and returns how many it passed: a
// bucket keeps the last revisions only, so these are the keys whose value
// was last written between the two. It returns ctx's error, ErrClosed, or
// the error of the watch or of the status request. apply runs on the
// caller's goroutine.
func Range(ctx context.Context, kv jetstream.KeyValue, from, to uint64, limit int, apply func(jetstream.KeyValueEntry)) (int, error) {
	if from == 0 || to < from || limit <= 0 {
		return 0, nil
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := kv.WatchAll(rctx, jetstream.IncludeHistory(), jetstream.ResumeFromRevision(from))
	if err != nil {
		return 0, fmt.Errorf("watch bucket %s from revision %d: %w", kv.Bucket(), from, err)
	}
	defer func() { _ = w.Stop() }()
	n, full := 0, false
	err = InitialAllAfter(rctx, boundedStatus{kv, to}, w, from-1, func(e jetstream.KeyValueEntry) {
		if e.Revision() > to || full {
			return
		}
		apply(e)
		if n++; n == limit {
			full = true
			stop()
		}
	})
	if full && ctx.Err() == nil {
		return n, nil
	}
	return n, err
}

// boundedStatus is a bucket whose stream seems to end at revision to, if
// it goes on after it: what Range reads up to.
type boundedStatus struct {
	jetstream.KeyValue
	to uint64
}

func (b boundedStatus) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	st, err := b.KeyValue.Status(ctx)
	if err != nil {
		return nil, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return st, nil
	}
	info := *bs.StreamInfo()
	info.State.LastSeq = min(info.State.LastSeq, b.to)
	return boundedInfo{st, &info}, nil
}

// boundedInfo is a status whose stream info is boundedStatus's.
type boundedInfo struct {
	jetstream.KeyValueStatus
	info *jetstream.StreamInfo
}

func (b boundedInfo) StreamInfo() *jetstream.StreamInfo { return b.info }

// errNoStreamInfo: a bucket whose status has no stream info (a wrapper of
// the client's KeyValue), so only the watch's own signal tells the end.
var errNoStreamInfo = errors.New("the bucket's status has no stream info")

// lastSeq returns the stream sequence of the last message on bucket's keys
// matching pattern (0: none), as the stream leader has it (see Last).
func lastSeq(ctx context.Context, js jetstream.JetStream, bucket, pattern string) (uint64, error) {
	e, err := Last(ctx, js, bucket, pattern)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return e.Revision(), nil
}

// MaxLastValue bounds the value Last accepts in an answer.
const MaxLastValue = 8 << 20

// Last returns the last message on bucket's keys matching pattern (a KV
// key pattern, wildcards allowed), deletions included (Operation says
// which), as the stream leader has it: the JetStream API's message get,
// which only the leader answers (a direct get may come from a replica
// behind it). No message is an error matching jetstream.ErrKeyNotFound;
// an answer that does not read (a value over MaxLastValue, a subject
// outside the bucket, bad headers) is an error that says why. Safe for
// concurrent use.
func Last(ctx context.Context, js jetstream.JetStream, bucket, pattern string) (jetstream.KeyValueEntry, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	prefix := "$KV." + bucket + "."
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{prefix + pattern})
	resp, err := js.Conn().RequestWithContext(ctx, apiPrefix(js.Options())+"STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, fmt.Errorf("read the last message of %s in bucket %s: %w", pattern, bucket, err)
	}
	var r struct {
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if len(resp.Data) > MaxLastValue*2 {
		return nil, fmt.Errorf("read the last message of %s in bucket %s: the answer is %d bytes, over twice the limit of %d", pattern, bucket, len(resp.Data), MaxLastValue)
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("read the last message of %s in bucket %s: the answer does not decode: %w", pattern, bucket, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound):
		return nil, fmt.Errorf("no message of %s in bucket %s: %w", pattern, bucket, jetstream.ErrKeyNotFound)
	case r.Error != nil:
		return nil, fmt.Errorf("read the last message of %s in bucket %s: %s (code %d)", pattern, bucket, r.Error.Description, r.Error.ErrCode)
	case r.Message == nil:
		return nil, fmt.Errorf("read the last message of %s in bucket %s: the answer has no message", pattern, bucket)
	case !strings.HasPrefix(r.Message.Subject, prefix) || len(r.Message.Subject) == len(prefix):
		return nil, fmt.Errorf("read the last message of %s in bucket %s: the answer's subject %.80q is not a key of the bucket", pattern, bucket, r.Message.Subject)
	case len(r.Message.Data) > MaxLastValue:
		return nil, fmt.Errorf("read the last message of %s in bucket %s: the value is %d bytes, over the limit of %d", pattern, bucket, len(r.Message.Data), MaxLastValue)
	}
	op, err := operation(r.Message.Header)
	if err != nil {
		return nil, fmt.Errorf("read the last message of %s in bucket %s: its headers do not read: %w", pattern, bucket, err)
	}
	return entry{bucket: bucket, key: r.Message.Subject[len(prefix):], value: r.Message.Data, rev: r.Message.Seq, created: r.Message.Time, op: op}, nil
}

// The header of a KV deletion or purge marker, and its values.
const (
	OperationHeader = "KV-Operation"
	OperationDelete = "DEL"
	OperationPurge  = "PURGE"
)

// operation returns the KV operation a message's raw headers say.
func operation(hdr []byte) (jetstream.KeyValueOp, error) {
	if len(hdr) == 0 {
		return jetstream.KeyValuePut, nil
	}
	h, err := nats.DecodeHeadersMsg(hdr)
	if err != nil {
		return 0, err
	}
	switch h.Get(OperationHeader) {
	case OperationDelete:
		return jetstream.KeyValueDelete, nil
	case OperationPurge:
		return jetstream.KeyValuePurge, nil
	}
	return jetstream.KeyValuePut, nil
}

// entry is a message Last read.
type entry struct {
	bucket, key string
	value       []byte
	rev         uint64
	created     time.Time
	op          jetstream.KeyValueOp
}

func (e entry) Bucket() string                  { return e.bucket }
func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.value }
func (e entry) Revision() uint64                { return e.rev }
func (e entry) Created() time.Time              { return e.created }
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return e.op }

// apiPrefix is the JetStream API prefix js sends its requests to.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// Keys returns the keys of kv matching pattern (">" for all) that have a
// value, in no order: jetstream.KeyValue.ListKeys without its early end
// (see the package doc). Errors are those of Initial or of the watch.
func Keys(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, pattern string) ([]string, error) {
	w, err := kv.Watch(ctx, pattern, jetstream.IncludeHistory(), jetstream.MetaOnly())
	if err != nil {
		return nil, fmt.Errorf("list the keys of bucket %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	live := make(map[string]bool)
	if err := Initial(ctx, js, kv, pattern, w, func(e jetstream.KeyValueEntry) {
		if e.Operation() == jetstream.KeyValuePut {
			live[e.Key()] = true
		} else {
			delete(live, e.Key())
		}
	}); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(live))
	for k := range live {
		keys = append(keys, k)
	}
	return keys, nil
}

// ErrEnded is returned by Follow when the watch closes: its consumer was
// deleted, or the connection closed.
var ErrEnded = errors.New("the watch ended")

// Follow passes w's entries to apply, in order, skipping the nil entry
// that marks the end of the initial values, until ctx ends (nil) or the
// watch closes (ErrEnded). It does not stop w. apply runs on the caller's
// goroutine; one that blocks should give up when ctx ends.
func Follow(ctx context.Context, w jetstream.KeyWatcher, apply func(jetstream.KeyValueEntry)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return ErrEnded
			}
			if e != nil {
				apply(e)
			}
		}
	}
}
