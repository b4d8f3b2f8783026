package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// ErrRemovalDenied reports a Remove on a stream that denies purges: one
// created before removal was allowed for its context (WithRemovable), or
// by something else. JetStream never lets an existing stream drop
// DenyPurge; docs/retention.md says how such a stream is migrated.
var ErrRemovalDenied = errors.New("jsstore: the stream denies purges")

// WithRemovable lets Remove purge the histories of aggregates of the given
// contexts: their streams are created without DenyPurge. Every other
// guarantee stays: messages are never deleted one by one (DenyDelete), no
// limit expires them, and nothing but Remove purges. Removal is meant for
// records that are finished and past a retention (scheduler's sweeper);
// the contexts of a service's own events are not made removable.
//
// A stream that exists already keeps its DenyPurge: JetStream refuses to
// clear it on an update (nats-server's configUpdateCheck: "can not cancel
// deny purge"), so Provision accepts it and Remove returns
// ErrRemovalDenied until it is migrated.
func WithRemovable(contexts ...string) Option {
	return func(o *options) error {
		for _, c := range contexts {
			if err := eventstore.ValidateName("removable context", c); err != nil {
				return invalidOption("removable context %q: %v", c, err)
			}
			if !slices.Contains(o.removable, c) {
				o.removable = append(o.removable, c)
			}
		}
		return nil
	}
}

// Removable reports whether Remove can purge the histories of context's
// aggregates: its stream, provisioned if needed, does not deny purges.
// Errors are those of provisioning.
func (s *Store) Removable(ctx context.Context, context string) (bool, error) {
	h, err := s.stream(ctx, context)
	if err != nil {
		return false, err
	}
	info, err := h.stream.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("stream %s: %w", h.name, err)
	}
	return !info.Config.DenyPurge, nil
}

// Remove purges the history of aggregate a up to and including stream
// sequence through (every message of a's subject at or below it) and
// returns how many messages went. Messages appended after through (a
// record re-opened meanwhile) stay. An aggregate with nothing at or below
// through purges nothing and is not an error, so a Remove that is run
// again after a crash does no harm. Once its history is gone a later
// Append starts the aggregate again at version 1.
//
// Errors: ErrRemovalDenied if the stream denies purges (see
// WithRemovable), eventstore.ErrInvalid for an invalid aggregate or a
// through of 0, JetStream's. Safe for concurrent use.
func (s *Store) Remove(ctx context.Context, a eventstore.AggregateID, through uint64) (uint64, error) {
	if err := a.Validate(); err != nil {
		return 0, err
	}
	if through == 0 {
		return 0, fmt.Errorf("remove %s through sequence 0: sequences start at 1: %w", a, eventstore.ErrInvalid)
	}
	h, err := s.stream(ctx, a.Context)
	if err != nil {
		return 0, err
	}
	subj, err := subject(s.opts.subjectPrefix, a)
	if err != nil {
		return 0, err
	}
	req, _ := json.Marshal(jetstream.StreamPurgeRequest{Subject: subj, Sequence: through + 1})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	// The purge is sent raw (nats.go's Purge does not return the count).
	resp, err := s.nc.RequestWithContext(ctx, s.opts.apiPrefix+"STREAM.PURGE."+h.name, req)
	s.positions.forget(subj) // whatever happened, read the subject again
	if err != nil {
		return 0, fmt.Errorf("remove %s from %s: %w", a, h.name, err)
	}
	var out struct {
		Success bool                `json:"success"`
		Purged  uint64              `json:"purged"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		return 0, fmt.Errorf("remove %s from %s: bad response: %w", a, h.name, err)
	}
	if out.Error != nil {
		// A denied purge has the code of every failed purge; the
		// stream's settings tell.
		if info, ierr := h.stream.Info(ctx); ierr == nil && info.Config.DenyPurge {
			return 0, fmt.Errorf("remove %s: stream %s denies purges (created before retention was allowed; see docs/retention.md to migrate it): %w", a, h.name, ErrRemovalDenied)
		}
		return 0, fmt.Errorf("remove %s from %s: %w", a, h.name, out.Error)
	}
	if !out.Success {
		return 0, fmt.Errorf("remove %s from %s: the server did not confirm the purge", a, h.name)
	}
	return out.Purged, nil
}
