package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/kvstore"
)

// storedKey is the bucket entry of a single command's Idempotency-Key: a
// hash of the request it was first used for.
type storedKey struct {
	Hash string `json:"hash"`
	At   int64  `json:"at"`
}

func idempotencyKey(key string) string { return kvstore.Hash("k_", key) }

// commandHash identifies a single command request: the command, the record
// and the body (JSON normalised, so key order and spacing do not count).
func commandHash(name, id string, body []byte) string {
	return bodyHash(name+"\x00"+id, body)
}

// claimKey binds Idempotency-Key key to the request with hash, in the
// batch bucket (Config.Batches; kept as long as batch results), so that
// the key cannot be reused for another command, record or body: that is a
// 422 IdempotencyKeyReused. The same request again passes, and the
// aggregate's command id answers it as a duplicate. release is called with
// the command's error: a command refused without writing (an
// *aggregate.Error) frees the key again, so a corrected request may use
// it. No key, or a server without a batch bucket, claims nothing (the
// record then only recognises the key of a command it ran).
func (s *Server) claimKey(ctx context.Context, key, hash string) (release func(error), err error) {
	none := func(error) {}
	kv := s.batches()
	if key == "" || kv == nil {
		return none, nil
	}
	k := idempotencyKey(key)
	mine := batchEntry{key: &storedKey{Hash: hash, At: s.cfg.Clock.Now().UnixMilli()}}
	claimed := false
	_, rev, err := kv.Change(ctx, k, func(cur kvstore.Current[batchEntry]) (batchEntry, kvstore.Action, error) {
		if !cur.Exists() || cur.Value.key == nil {
			claimed = true
			return mine, kvstore.Write, nil // new, freed, or stored invalid: taken over
		}
		if cur.Value.key.Hash != hash {
			return batchEntry{}, kvstore.Keep, &apiError{status: http.StatusUnprocessableEntity, body: api.Error{Code: "IdempotencyKeyReused",
				Message: fmt.Sprintf("Idempotency-Key %s was used for another request (another command, record or body); send a new key for a new request", quote(key)),
				Details: map[string]any{"field": "Idempotency-Key"}}}
		}
		claimed = false
		return batchEntry{}, kvstore.Keep, nil // the same request again
	})
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return none, err
	case errors.Is(err, kvstore.ErrConflict):
		return none, &apiError{status: http.StatusConflict, body: api.Error{Code: "Conflict",
			Message: fmt.Sprintf("Idempotency-Key %s is being claimed by concurrent requests; send the request again", quote(key)),
			Details: map[string]any{"field": "Idempotency-Key"}}}
	case err != nil:
		return none, fmt.Errorf("claim the idempotency key: %w", err)
	case !claimed:
		return none, nil
	}
	return func(err error) {
		if err == nil || !errors.As(err, new(*aggregate.Error)) {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := kv.Delete(ctx, k, rev); err != nil {
			s.log.Warn("free an idempotency key", "err", err)
		}
	}, nil
}
