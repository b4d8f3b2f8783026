package failure

import (
	"context"

	"github.com/amends-dev/amends/aggregate"
)

// Rules are a function's own classification lists (Wow's
// @Retry(recoverable, unrecoverable)). The zero Rules classify nothing.
type Rules struct {
	// Recoverable lists errors retrying may fix.
	Recoverable []Matcher
	// Unrecoverable lists errors retrying will not fix.
	Unrecoverable []Matcher
}

// Empty reports whether r has no matchers.
func (r Rules) Empty() bool { return len(r.Recoverable) == 0 && len(r.Unrecoverable) == 0 }

// Classify returns err's recoverability: the function's rules first, then
// the global registry, then marks, then timeouts, else UNKNOWN (see the
// package documentation). A nil err is UNKNOWN.
func Classify(err error, rules Rules) aggregate.Recoverability {
	if err == nil {
		return aggregate.RecoverabilityUnknown
	}
	if r, ok := byDistance(depthOf(err, rules.Recoverable), depthOf(err, rules.Unrecoverable)); ok {
		return r
	}
	if r, ok := registered(err); ok {
		return r
	}
	if r, ok := byDistance(markDepth(err, recoverableMark), markDepth(err, unrecoverableMark)); ok {
		return r
	}
	if IsTimeout(err) {
		return aggregate.Recoverable
	}
	return aggregate.RecoverabilityUnknown
}

// byDistance decides between a recoverable match at depth dr and an
// unrecoverable one at du (-1: none): the nearer wins, a tie is
// RECOVERABLE. ok is false when neither matched.
func byDistance(dr, du int) (aggregate.Recoverability, bool) {
	switch {
	case dr < 0 && du < 0:
		return "", false
	case du >= 0 && (dr < 0 || du < dr):
		return aggregate.Unrecoverable, true
	default:
		return aggregate.Recoverable, true
	}
}

// IsTimeout reports whether err is or wraps context.DeadlineExceeded or an
// error whose Timeout method reports true (net.Error,
// os.ErrDeadlineExceeded).
func IsTimeout(err error) bool {
	return nearest(err, func(node error) bool {
		if node == context.DeadlineExceeded {
			return true
		}
		t, ok := node.(interface{ Timeout() bool })
		return ok && t.Timeout()
	}) >= 0
}
