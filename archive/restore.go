package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// Store is what Restore appends to; *jsstore.Store satisfies it.
type Store interface {
	Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error)
	Append(ctx context.Context, st eventstore.Stream, expectedVersion uint64) (eventstore.Stream, error)
}

// The outcomes of a restore.
const (
	// Restored: the record had no history; every stream was appended
	// again, or would be in a dry run.
	Restored = "restored"
	// Completed: an earlier restore of it stopped part way; the rest was
	// appended.
	Completed = "completed"
	// Present: the record's history is in the store already.
	Present = "present"
	// Diverged: the record exists with another history (it failed again
	// after its removal); nothing is appended, the live record wins.
	Diverged = "diverged"
)

// RestoreResult says what Restore did with one record.
type RestoreResult struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	// Appended counts the streams appended (or that would be).
	Appended int `json:"appended"`
}

// Restore appends record r's archived history to store again, versions 1
// to n with their ids, commands, times and state, so that the projector
// gives the record its view back. A record with no history gets all of it;
// one whose history is a prefix of the archived one (an interrupted
// restore) gets the rest; one with the archived history is left alone
// (Present); one with another history is left alone (Diverged). With
// dryRun nothing is appended. Errors are the store's.
func Restore(ctx context.Context, store Store, r Record, dryRun bool) (RestoreResult, error) {
	res := RestoreResult{ID: r.ID}
	if err := r.check(); err != nil {
		return res, err
	}
	have, err := store.Load(ctx, aggregate.RecordAggregate(r.ID), 1)
	if err != nil && !errors.Is(err, eventstore.ErrNotFound) {
		return res, fmt.Errorf("read record %s: %w", r.ID, err)
	}
	from := len(have)
	res.Outcome = Restored
	if from > 0 {
		res.Outcome = Completed
		for i, st := range have {
			if i >= len(r.Streams) || st.ID != r.Streams[i].ID {
				res.Outcome = Diverged
				return res, nil
			}
		}
		if from == len(r.Streams) {
			res.Outcome = Present
			return res, nil
		}
	}
	res.Appended = len(r.Streams) - from
	if dryRun {
		return res, nil
	}
	for _, st := range r.Streams[from:] {
		st.Seq = 0
		if _, err := store.Append(ctx, st, st.Version-1); err != nil {
			return res, fmt.Errorf("restore record %s version %d: %w", r.ID, st.Version, err)
		}
	}
	return res, nil
}
