package rules

import (
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// ApplyToCreate changes a creation the way r acts on a new failure:
// MARK_* set its classification, APPLY_RETRY_SPEC its retry spec, WAIVE
// both (UNRECOVERABLE, the spec with maxRetries 0). HOLD_UNTIL_DEPLOY
// (park until deploy) leaves it as it is: parking is the scheduler's (see
// Set.Parked). A rule
// that is not valid (an APPLY_RETRY_SPEC without its spec, which the store
// never hands out) changes nothing.
func ApplyToCreate(r *api.Rule, c *aggregate.CreateExecutionFailed, defaultSpec aggregate.RetrySpec) {
	switch r.Action {
	case MarkUnrecoverable:
		c.Recoverable = aggregate.Unrecoverable
	case MarkRecoverable:
		c.Recoverable = aggregate.Recoverable
	case ApplyRetrySpec:
		if r.RetrySpec == nil {
			return
		}
		spec := *r.RetrySpec
		c.RetrySpec = &spec
	case Waive:
		spec := defaultSpec
		if c.RetrySpec != nil {
			spec = *c.RetrySpec
		}
		spec.MaxRetries = 0
		c.RetrySpec = &spec
		c.Recoverable = aggregate.Unrecoverable
	}
}

// CommandOf is the command r applies to an existing record, and false for
// HOLD_UNTIL_DEPLOY (park until deploy), which needs none, and for a rule that is not valid
// (an APPLY_RETRY_SPEC without its spec, an unknown action).
func CommandOf(r *api.Rule) (aggregate.Command, bool) {
	switch r.Action {
	case MarkUnrecoverable, Waive:
		return aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}, true
	case MarkRecoverable:
		return aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable}, true
	case ApplyRetrySpec:
		if r.RetrySpec == nil {
			return nil, false
		}
		return aggregate.ApplyRetrySpec(*r.RetrySpec), true
	}
	return nil, false
}
