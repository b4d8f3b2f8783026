package api

// SkipMessageRequest is the body of POST /api/v1/repair/skip-message: the
// message of an event store stream that loaders should pass over (it is
// not a stream amends wrote and bricks its aggregate), why (required:
// the skip is audited), and whether to dry-run it.
type SkipMessageRequest struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// SkipMessagePlan is the answer of POST /api/v1/repair/skip-message: the
// message, why loaders cannot read it, the one they read in its place
// (Prev, 0 for none) and the aggregate's version then; Skipped once it is
// stored (false for a dry run), with the actor, reason and time.
type SkipMessagePlan struct {
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	Problem string `json:"problem"`
	Size    int    `json:"size"`
	Prev    uint64 `json:"prev"`
	Version uint64 `json:"version"`
	Skipped bool   `json:"skipped"`
	DryRun  bool   `json:"dryRun"`
	Actor   string `json:"actor,omitempty"`
	Reason  string `json:"reason,omitempty"`
	At      int64  `json:"at,omitempty"`
}

// PurgeEntryRequest is the body of POST /api/v1/repair/purge-entry: an
// entry of a KV bucket that the quarantine lists as invalid, at the
// revision it lists, to remove; why (required, logged), and whether to
// dry-run it.
type PurgeEntryRequest struct {
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	Revision uint64 `json:"revision"`
	Reason   string `json:"reason"`
	DryRun   bool   `json:"dryRun,omitempty"`
}

// PurgeEntryPlan is the answer of POST /api/v1/repair/purge-entry: the
// quarantine's entry of the bucket's entry, and whether it was purged
// (false for a dry run).
type PurgeEntryPlan struct {
	Entry  QuarantineEntry `json:"entry"`
	Purged bool            `json:"purged"`
	DryRun bool            `json:"dryRun"`
}
