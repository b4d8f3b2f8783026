package projection

import (
	"errors"

	"github.com/amends-dev/amends/projection/index"
)

// Sentinels matched with errors.Is. Errors that wrap them name the value and
// the rule that was broken.
var (
	// ErrNotFound: the record has no view (it does not exist, or the
	// projector has not reached it yet).
	ErrNotFound = errors.New("projection: not found")
	// ErrInvalidOption: an option value a constructor cannot use.
	ErrInvalidOption = errors.New("projection: invalid option")
	// ErrInvalidQuery: a filter, sort, limit or cursor that breaks a rule
	// (the index's sentinel: see QueryError).
	ErrInvalidQuery = index.ErrInvalidQuery
	// ErrIncompatibleBucket: the views bucket exists with settings other
	// than the ones asked for. amends never reconfigures it.
	ErrIncompatibleBucket = errors.New("projection: incompatible bucket")
	// ErrCorruptView: a stored view that is not a view amends wrote.
	ErrCorruptView = errors.New("projection: corrupt view")
	// ErrNotCurrent: the index may not hold the bucket's latest views (not
	// loaded yet, or its watch is being restarted); see Index.Healthy.
	ErrNotCurrent = errors.New("projection: index not current")
	// ErrNoSnapshot: the snapshot bucket holds no snapshot of the views
	// bucket (Snapshots.Load).
	ErrNoSnapshot = errors.New("projection: no snapshot")
	// ErrSnapshotTooLarge: a snapshot past the bound of its reader.
	ErrSnapshotTooLarge = errors.New("projection: snapshot too large")
)
