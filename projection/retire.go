package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvstore"
)

// RetireView deletes the view of record id if it is of the record's
// history up to stream sequence through, the history retention removed
// (scheduler's sweeper): the index drops the record when its watch sees
// the delete. A view of a later stream (the record failed again after
// its removal) is kept, and so is a view another writer changed
// meanwhile (the delete is a compare-and-set on the revision read), and
// one that does not decode is left to the index's repair. A missing view
// is not an error. It reports whether it deleted one.
// Errors: ErrInvalidQuery for an id that cannot be a record id, the
// bucket's. Safe for concurrent use.
func RetireView(ctx context.Context, views jetstream.KeyValue, id string, through uint64) (bool, error) {
	key, err := EncodeKey(id)
	if err != nil {
		return false, err
	}
	e, err := views.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read view %s: %w", key, err)
	}
	v, err := readView(e.Value())
	if err != nil || v.Seq > through {
		// Of a later history, or one that does not decode: the index
		// quarantines that, and the reprojector deletes a view whose
		// record has no history.
		return false, nil
	}
	if err := views.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		if kvstore.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("delete view %s: %w", key, err)
	}
	return true, nil
}
