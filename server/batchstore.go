package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBatchBucket is the KV bucket of batch results.
const DefaultBatchBucket = "amends_batches"

// batchRetention is how long a batch result is kept for idempotency.
const batchRetention = 7 * 24 * time.Hour

// staleBatch is how long a batch may run before another request with its id
// may take it over (the first server probably died).
const staleBatch = 10 * time.Minute

// OpenBatches returns the bucket of batch results, creating it with the
// given replicas if missing. Results are kept 7 days, and so are the
// Idempotency-Keys of single commands (keys "k_..."), each bound to the
// request that first used it.
func OpenBatches(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      DefaultBatchBucket,
		Description: "amends: results of batch commands by request id",
		TTL:         batchRetention,
		Replicas:    max(replicas, 1),
		History:     1,
	})
	if err != nil {
		return nil, fmt.Errorf("open the batch bucket %s: %w", DefaultBatchBucket, err)
	}
	return kv, nil
}

// storedBatch is a bucket entry.
type storedBatch struct {
	Running   bool         `json:"running"`
	BodyHash  string       `json:"bodyHash"`
	StartedAt int64        `json:"startedAt"`
	Result    *BatchResult `json:"result,omitempty"`
}

func batchKey(requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return "b_" + hex.EncodeToString(sum[:20])
}

// claimBatch makes this request the runner of batch requestID. It returns
// the stored result if the batch completed before, or a release function
// that stores the result when the run ends.
func (s *Server) claimBatch(ctx context.Context, requestID, hash string) (*BatchResult, func(*BatchResult), error) {
	kv := s.cfg.Batches
	if kv == nil {
		return nil, nil, errors.New("the server has no batch bucket (server.Config.Batches)")
	}
	key := batchKey(requestID)
	now := s.cfg.Clock.Now()
	running, _ := json.Marshal(storedBatch{Running: true, BodyHash: hash, StartedAt: now.UnixMilli()})
	release := func(res *BatchResult) {
		data, _ := json.Marshal(storedBatch{BodyHash: hash, StartedAt: now.UnixMilli(), Result: res})
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := kv.Put(ctx, key, data); err != nil {
			s.log.Error("store batch result", "requestId", requestID, "err", err)
		}
	}
	for range 3 {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := kv.Create(ctx, key, running); errors.Is(err, jetstream.ErrKeyExists) {
				continue // another request claimed it first
			} else if err != nil {
				return nil, nil, fmt.Errorf("claim batch %s: %w", requestID, err)
			}
			return nil, release, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read batch %s: %w", requestID, err)
		}
		var st storedBatch
		if err := json.Unmarshal(e.Value(), &st); err != nil {
			return nil, nil, fmt.Errorf("batch %s: stored entry: %w", requestID, err)
		}
		if st.BodyHash != hash {
			return nil, nil, &apiError{status: http.StatusUnprocessableEntity, body: Error{Code: "RequestIDReused",
				Message: fmt.Sprintf("requestId %q was used for a different batch (another command, filter or option); use a new requestId", requestID)}}
		}
		if !st.Running && st.Result != nil && st.Result.Complete {
			return st.Result, nil, nil
		}
		if st.Running && now.Sub(time.UnixMilli(st.StartedAt)) < staleBatch {
			return nil, nil, &apiError{status: http.StatusConflict, body: Error{Code: "BatchRunning",
				Message: fmt.Sprintf("batch %q is running since %s; wait for it, then send it again to read its result", requestID, time.UnixMilli(st.StartedAt).UTC().Format(time.RFC3339))}}
		}
		// Interrupted, or its runner died: run it again. Records it already
		// reached see their command as a duplicate.
		if _, err := kv.Update(ctx, key, running, e.Revision()); err != nil {
			continue
		}
		return nil, release, nil
	}
	return nil, nil, &apiError{status: http.StatusConflict, body: Error{Code: "BatchRunning", Message: fmt.Sprintf("batch %q is being claimed by another request; send it again", requestID)}}
}
