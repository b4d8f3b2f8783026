package aggregate

import (
	"fmt"
	"time"
)

// View is one of the operator views of the compensation dashboard.
type View string

// The views, with their dashboard paths.
const (
	// ViewToRetry: auto-retried records that a prepare would accept now.
	ViewToRetry View = "to-retry"
	// ViewExecuting: prepared records whose attempt has not timed out.
	ViewExecuting View = "executing"
	// ViewNextRetry: to-retry records that are due (what the scheduler takes).
	ViewNextRetry View = "next-retry"
	// ViewNonRetryable: auto-retried, unfinished records out of retries.
	ViewNonRetryable View = "non-retryable"
	// ViewSucceeded: records whose replay succeeded.
	ViewSucceeded View = "succeeded"
	// ViewUnrecoverable: unfinished records classified UNRECOVERABLE.
	ViewUnrecoverable View = "unrecoverable"
)

// Views lists every view in dashboard order.
var Views = []View{ViewToRetry, ViewExecuting, ViewNextRetry, ViewNonRetryable, ViewSucceeded, ViewUnrecoverable}

// ParseView reads a view name. The error names the allowed values.
func ParseView(s string) (View, error) {
	for _, v := range Views {
		if string(v) == s {
			return v, nil
		}
	}
	return "", illegalArgument(fmt.Sprintf("view must be one of %v, got %q.", Views, s))
}

// Contains reports whether the record belongs to view v at time now. Each
// view is written with the record's predicates, so a view and the
// commands always agree.
func (v View) Contains(s *State, now time.Time) bool {
	if !s.Exists() {
		return false
	}
	unfinished := s.Status == StatusFailed || s.Status == StatusPrepared
	switch v {
	case ViewToRetry:
		return s.Recoverable.AutoRetried() && s.CanRetry(now)
	case ViewExecuting:
		return s.Status == StatusPrepared && !s.Timeout(now)
	case ViewNextRetry:
		return s.Schedulable(now)
	case ViewNonRetryable:
		return s.Recoverable.AutoRetried() && unfinished && !s.IsBelowRetryThreshold()
	case ViewSucceeded:
		return s.Status == StatusSucceeded
	case ViewUnrecoverable:
		return s.Recoverable == Unrecoverable && unfinished
	default:
		return false
	}
}
