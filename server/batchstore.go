package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultBatchBucket is the KV bucket of batch results.
const DefaultBatchBucket = "amends_batches"

// batchRetention is how long a batch result is kept for idempotency.
const batchRetention = 7 * 24 * time.Hour

// staleBatch is how long a batch may run before another request with its id
// may take it over (the first server probably died).
const staleBatch = 10 * time.Minute

// maxBatchValue bounds a stored batch result: MaxApply outcomes fit.
const maxBatchValue = 4 << 20

// BatchSpec is the batch bucket: results and Idempotency-Keys kept 7 days
// (its TTL must match); a cache of idempotency, which Repair may recreate.
func BatchSpec(replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket:      DefaultBatchBucket,
		Description: "amends: results of batch commands by request id",
		TTL:         batchRetention,
		Replicas:    max(replicas, 1),
		History:     1,
	}, MaxValue: maxBatchValue, Disposable: true, Match: []kvstore.Setting{kvstore.SettingTTL}}
}

// OpenBatches returns the bucket of batch results, creating it with the
// given replicas if missing (and bringing its TTL to 7 days). Results are
// kept 7 days, and so are the Idempotency-Keys of single commands (keys
// "k_..."), each bound to the request that first used it.
func OpenBatches(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	spec := BatchSpec(replicas)
	if _, err := kvstore.Repair(ctx, js, spec, false); err != nil {
		return nil, fmt.Errorf("open the batch bucket %s: %w", DefaultBatchBucket, err)
	}
	b, err := kvstore.Open(ctx, js, spec)
	if err != nil {
		return nil, fmt.Errorf("open the batch bucket %s: %w", DefaultBatchBucket, err)
	}
	return b.KV(), nil
}

// storedBatch is a bucket entry.
type storedBatch struct {
	Running   bool             `json:"running"`
	BodyHash  string           `json:"bodyHash"`
	StartedAt int64            `json:"startedAt"`
	Result    *api.BatchResult `json:"result,omitempty"`
}

// batchEntry is a value of the batch bucket: a batch (keys b_...) or an
// Idempotency-Key (keys k_...).
type batchEntry struct {
	batch *storedBatch
	key   *storedKey
}

var batchCodec = kvstore.Codec[batchEntry]{
	Decode: decodeBatchEntry,
	Encode: func(e batchEntry) ([]byte, error) {
		if e.key != nil {
			return json.Marshal(e.key)
		}
		return json.Marshal(e.batch)
	},
}

// decodeBatchEntry reads an entry of the batch bucket, validating it: a
// batch under a batch key (batchKey) with a body hash, a start before now
// and, if stored, a result of a known command whose counts and outcomes
// are within the batch limits; or an Idempotency-Key under an idempotency
// key with a request hash and a time before now.
func decodeBatchEntry(e kvstore.Entry) (batchEntry, error) {
	switch {
	case kvstore.IsHash("b_", e.Key):
		var b storedBatch
		if err := json.Unmarshal(e.Value, &b); err != nil {
			return batchEntry{}, kvstore.Invalid("", "not a batch in JSON: %v", err)
		}
		if err := kvstore.Text("bodyHash", b.BodyHash, 128, true); err != nil {
			return batchEntry{}, err
		}
		if err := kvstore.Past("startedAt", b.StartedAt, e.Now, false); err != nil {
			return batchEntry{}, err
		}
		if err := checkStoredResult(b.Result); err != nil {
			return batchEntry{}, err
		}
		return batchEntry{batch: &b}, nil
	case kvstore.IsHash("k_", e.Key):
		var k storedKey
		if err := json.Unmarshal(e.Value, &k); err != nil {
			return batchEntry{}, kvstore.Invalid("", "not an idempotency key in JSON: %v", err)
		}
		if err := kvstore.Text("hash", k.Hash, 128, true); err != nil {
			return batchEntry{}, err
		}
		if err := kvstore.Past("at", k.At, e.Now, false); err != nil {
			return batchEntry{}, err
		}
		return batchEntry{key: &k}, nil
	}
	return batchEntry{}, kvstore.Invalid("key", "is neither a batch key (b_) nor an idempotency key (k_) with 40 hexadecimal digits")
}

// batches is the typed batch bucket, or nil without Config.Batches.
func (s *Server) batches() *kvstore.Store[batchEntry] {
	s.batchOnce.Do(func() {
		if s.cfg.Batches == nil {
			return
		}
		var opts []kvstore.Option
		if r, ok := s.cfg.Quarantine.(kvstore.Recorder); ok {
			opts = append(opts, kvstore.WithRecorder(r))
		}
		opts = append(opts, kvstore.WithLogger(s.log), kvstore.WithClock(s.cfg.Clock.Now))
		s.batchStore = kvstore.For(kvstore.Bind(nil, s.cfg.Batches, BatchSpec(1), opts...), batchCodec)
	})
	return s.batchStore
}

func batchKey(requestID string) string { return kvstore.Hash("b_", requestID) }

// claimBatch makes this request the runner of batch requestID. It returns
// the stored result if the batch completed before, or a release function
// that stores the result when the run ends. A stored entry that does not
// validate is taken over: running the batch again is safe, as each
// record's command id answers a repeat as a duplicate.
func (s *Server) claimBatch(ctx context.Context, requestID, hash string) (*api.BatchResult, func(*api.BatchResult), error) {
	kv := s.batches()
	if kv == nil {
		return nil, nil, errors.New("the server has no batch bucket (server.Config.Batches)")
	}
	key := batchKey(requestID)
	now := s.cfg.Clock.Now()
	running := batchEntry{batch: &storedBatch{Running: true, BodyHash: hash, StartedAt: now.UnixMilli()}}
	release := func(res *api.BatchResult) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := kv.Put(ctx, key, batchEntry{batch: &storedBatch{BodyHash: hash, StartedAt: now.UnixMilli(), Result: res}}); err != nil {
			s.log.Error("store batch result", "requestId", requestID, "err", err)
		}
	}
	var done *api.BatchResult
	_, _, err := kv.Change(ctx, key, func(cur kvstore.Current[batchEntry]) (batchEntry, kvstore.Action, error) {
		if !cur.Exists() || cur.Value.batch == nil {
			return running, kvstore.Write, nil // new, or stored invalid: taken over
		}
		st := cur.Value.batch
		if st.BodyHash != hash {
			return batchEntry{}, kvstore.Keep, &apiError{status: http.StatusUnprocessableEntity, body: api.Error{Code: "RequestIDReused",
				Message: fmt.Sprintf("requestId %q was used for a different batch (another command, filter or option); use a new requestId", requestID)}}
		}
		if !st.Running && st.Result != nil && st.Result.Complete {
			done = st.Result
			return batchEntry{}, kvstore.Keep, nil
		}
		if st.Running && now.Sub(time.UnixMilli(st.StartedAt)) < staleBatch {
			return batchEntry{}, kvstore.Keep, &apiError{status: http.StatusConflict, body: api.Error{Code: "BatchRunning",
				Message: fmt.Sprintf("batch %q is running since %s; wait for it, then send it again to read its result", requestID, time.UnixMilli(st.StartedAt).UTC().Format(time.RFC3339))}}
		}
		// Interrupted, or its runner died: run it again. Records it already
		// reached see their command as a duplicate.
		return running, kvstore.Write, nil
	})
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return nil, nil, err
	case errors.Is(err, kvstore.ErrConflict):
		return nil, nil, &apiError{status: http.StatusConflict, body: api.Error{Code: "BatchRunning", Message: fmt.Sprintf("batch %q is being claimed by another request; send it again", requestID)}}
	case err != nil:
		return nil, nil, fmt.Errorf("claim batch %s: %w", requestID, err)
	case done != nil:
		return done, nil, nil
	}
	return nil, release, nil
}

// checkStoredResult checks a stored batch's result, if it has one: its
// command, counts and record ids.
func checkStoredResult(r *api.BatchResult) error {
	if r == nil {
		return nil
	}
	if err := kvstore.Text("result.command", r.Command, 64, true); err != nil {
		return err
	}
	if r.Matched < 0 || len(r.Records) > r.Matched && r.Matched > 0 {
		return kvstore.Invalid("result.matched", "%d does not count the %d records", r.Matched, len(r.Records))
	}
	for k, n := range r.Counts {
		if !bounds.Within(n, 0, len(r.Records)) {
			return kvstore.Invalid("result.counts."+k, "must be from 0 to the %d records, got %d", len(r.Records), n)
		}
	}
	for i, o := range r.Records {
		if err := kvstore.Text("result.records["+strconv.Itoa(i)+"].id", o.ID, 256, true); err != nil {
			return err
		}
	}
	return nil
}
