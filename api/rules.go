package api

import "github.com/amends-dev/amends/aggregate"

// RuleMatch is what a rule matches: a Fingerprint, or a function
// (FunctionContext, Processor, Function) and an ErrorCode, all four set.
type RuleMatch struct {
	Fingerprint     string `json:"fingerprint,omitempty"`
	FunctionContext string `json:"functionContext,omitempty"`
	Processor       string `json:"processor,omitempty"`
	Function        string `json:"function,omitempty"`
	ErrorCode       string `json:"errorCode,omitempty"`
}

// RuleAudit is one change of a rule.
type RuleAudit struct {
	// Op is "add", "remove" or "apply".
	Op     string `json:"op"`
	Actor  string `json:"actor"`
	Reason string `json:"reason,omitempty"`
	// At is when, in epoch ms.
	At int64 `json:"at"`
	// Records is how many records an apply touched.
	Records int `json:"records,omitempty"`
}

// Rule is an operator's rule on failures: the one type that package rules
// keeps in its bucket (as api.Rule) and GET /api/v1/rules shows. Action
// is MARK_UNRECOVERABLE, MARK_RECOVERABLE, APPLY_RETRY_SPEC,
// HOLD_UNTIL_DEPLOY (park until deploy) or WAIVE. Times are epoch ms.
//
// Touched, Live and Matching are not stored: the rules package derives
// Touched when it reads a rule, and the server fills Live and Matching
// when it answers.
type Rule struct {
	// ID names the rule; the store assigns it.
	ID     string    `json:"id"`
	Match  RuleMatch `json:"match"`
	Action string    `json:"action"`
	// RetrySpec is the spec of APPLY_RETRY_SPEC; nil for other actions.
	RetrySpec *aggregate.RetrySpec `json:"retrySpec,omitempty"`
	// Reason says why; required.
	Reason string `json:"reason"`
	// Actor and CreatedAt say who added it and when.
	Actor     string `json:"actor"`
	CreatedAt int64  `json:"createdAt"`
	// ExpiresAt, if set, ends the rule: from then on it no longer matches.
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	// RemovedAt is set once the rule is removed.
	RemovedAt int64 `json:"removedAt,omitempty"`
	// Recorded counts the failures the rule acted on when they were
	// recorded; Applied the records its applies changed; Touched is their
	// sum.
	Recorded int64 `json:"recorded"`
	Applied  int64 `json:"applied"`
	Touched  int64 `json:"touched"`
	// Live is false once the rule is removed or expired.
	Live bool `json:"live"`
	// Matching counts the unfinished records the rule matches now.
	Matching int `json:"matching"`
	// Audit lists the rule's changes, oldest first (at most rules.MaxAudit).
	Audit []RuleAudit `json:"audit"`
}

// RuleList is the body of GET /api/v1/rules: every rule, removed ones
// included, oldest first.
type RuleList struct {
	Rules []Rule `json:"rules"`
}

// RuleRequest is the body of POST /api/v1/rules. RetrySpec is required by
// APPLY_RETRY_SPEC and refused otherwise; Reason is required.
type RuleRequest struct {
	Match     RuleMatch            `json:"match"`
	Action    string               `json:"action"`
	RetrySpec *aggregate.RetrySpec `json:"retrySpec,omitempty"`
	Reason    string               `json:"reason"`
	ExpiresAt int64                `json:"expiresAt,omitempty"`
}

// RuleRemoveRequest is the body of POST /api/v1/rules/{id}/remove.
type RuleRemoveRequest struct {
	Reason string `json:"reason"`
}

// RuleApplyRequest is the body of POST /api/v1/rules/{id}/apply: the
// batch's options (see BatchRequest); the filter is the rule's match.
type RuleApplyRequest struct {
	DryRun        bool    `json:"dryRun,omitempty"`
	RequestID     string  `json:"requestId,omitempty"`
	Limit         int     `json:"limit,omitempty"`
	RatePerSecond float64 `json:"ratePerSecond,omitempty"`
	Reason        string  `json:"reason,omitempty"`
}

// RecordSchedule is the body of GET /api/v1/records/{id}/schedule: the
// automatic retries the record has left, each at the earliest time the
// scheduler prepares it (aggregate.RemainingSchedule).
type RecordSchedule struct {
	ID      string                     `json:"id"`
	Retries []aggregate.ScheduledRetry `json:"retries"`
	// ParkedBy is the park-until-deploy (HOLD_UNTIL_DEPLOY) rule that parks
	// the record, keeping it from automatic retries until a new build of
	// its processor registers; Retries is empty then. Its JSON name is the
	// wire's first, heldBy.
	ParkedBy string `json:"heldBy,omitempty"`
}
