package api

import (
	"encoding/base64"
	"net/url"
	"strconv"

	"github.com/amends-dev/amends/aggregate"
)

// Hold is the durable state of one (function, aggregate): its head is the
// record of a final failure of the function on the aggregate, and Held are
// the aggregate's later events the function has not been given yet, in
// version order. It holds references, never copies of events: a release
// reads each event from the store.
type Hold struct {
	Context       string      `json:"context"`
	Processor     string      `json:"processor"`
	Function      string      `json:"function"`
	AggregateType string      `json:"aggregateType"`
	AggregateID   string      `json:"aggregateId"`
	Head          HoldHead    `json:"head"`
	Held          []HeldEvent `json:"held,omitempty"`
	Releasing     bool        `json:"releasing,omitempty"`
	Released      *HoldAudit  `json:"released,omitempty"`
	Skipped       []HeldSkip  `json:"skipped,omitempty"`
	Claim         *HoldClaim  `json:"claim,omitempty"`
	// Recovered is set on a hold written in place of a stored one that did
	// not validate (garbage, truncated, under another key): its head is
	// unknown (Head.Record empty), so it waits for an operator's release,
	// and it holds the aggregate's events from then on.
	Recovered *HoldRecovery `json:"recovered,omitempty"`
}

// HoldRecovery says what a recovered hold replaced: the revision of the
// stored value that did not validate, why, and when it was replaced
// (epoch ms).
type HoldRecovery struct {
	Revision uint64 `json:"revision"`
	Reason   string `json:"reason"`
	At       int64  `json:"at"`
}

// HoldHead is the failure a hold waits on.
type HoldHead struct {
	// Record is the ExecutionFailed record id of the failure.
	Record  string `json:"record"`
	EventID string `json:"eventId"`
	Version uint64 `json:"version"`
	Seq     uint64 `json:"seq"`
	// Since is when the hold began (epoch ms).
	Since int64 `json:"since"`
}

// HeldEvent is a reference to one held event.
type HeldEvent struct {
	EventID string `json:"eventId"`
	Version uint64 `json:"version"`
	Seq     uint64 `json:"seq"`
	Index   int    `json:"index,omitempty"`
	HeldAt  int64  `json:"heldAt"`
}

// HoldAudit is who did an operator action on a hold, why and when.
type HoldAudit struct {
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
	At     int64  `json:"at"`
}

// HeldSkip is one held event an operator skipped.
type HeldSkip struct {
	HeldEvent
	HoldAudit
}

// HoldClaim is the instance running a release and until when its claim
// holds (epoch ms); another instance takes the release over only after it.
type HoldClaim struct {
	Owner string `json:"owner"`
	Until int64  `json:"until"`
}

// Key returns the hold's KV key (HoldKey).
func (h *Hold) Key() string {
	return HoldKey(h.Context, h.Processor, h.Function, h.AggregateType, h.AggregateID)
}

// HoldKey returns the key of the hold of function (processor, name) of
// context on aggregate (aggregateType, id):
// "<context>.<processor>.<name>.<aggregateType>.<base64url(id)>". It is
// the hold's id in the API (GET /api/v1/holds/{key}).
func HoldKey(context, processor, name, aggregateType, id string) string {
	return context + "." + processor + "." + name + "." + aggregateType + "." + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// ReleasePlan is what a release does or did.
type ReleasePlan struct {
	Hold Hold `json:"hold"`
	// HeadStatus is the head record's status before the release; empty if
	// the record does not exist.
	HeadStatus aggregate.Status `json:"headStatus,omitempty"`
	// Commands are the commands sent (or, dry, to send) to the head record
	// to mark it resolved.
	Commands []string `json:"commands"`
	DryRun   bool     `json:"dryRun"`
}

// HoldSummary is one hold as a list shows it.
type HoldSummary struct {
	Key           string `json:"key"`
	Context       string `json:"context"`
	Processor     string `json:"processor"`
	Function      string `json:"function"`
	AggregateType string `json:"aggregateType"`
	AggregateID   string `json:"aggregateId"`
	// HeadRecord is the record the hold waits on, HeadVersion its version.
	HeadRecord  string `json:"headRecord"`
	HeadVersion uint64 `json:"headVersion"`
	// Held is how many events are held; OldestVersion and NewestVersion
	// their versions (0 when none).
	Held          int    `json:"held"`
	OldestVersion uint64 `json:"oldestVersion,omitempty"`
	NewestVersion uint64 `json:"newestVersion,omitempty"`
	// Since is when the hold began (epoch ms).
	Since     int64 `json:"since"`
	Releasing bool  `json:"releasing"`
	// Recovered is the reason of a recovered hold (Hold.Recovered): the
	// stored value did not validate; release it once the aggregate's state
	// is checked.
	Recovered string `json:"recovered,omitempty"`
}

// Summary returns h as a list shows it.
func (h *Hold) Summary() HoldSummary {
	s := HoldSummary{Key: h.Key(), Context: h.Context, Processor: h.Processor, Function: h.Function,
		AggregateType: h.AggregateType, AggregateID: h.AggregateID, HeadRecord: h.Head.Record, HeadVersion: h.Head.Version,
		Held: len(h.Held), Since: h.Head.Since, Releasing: h.Releasing}
	if h.Recovered != nil {
		s.Recovered = h.Recovered.Reason
	}
	if n := len(h.Held); n > 0 {
		s.OldestVersion, s.NewestVersion = h.Held[0].Version, h.Held[n-1].Version
	}
	return s
}

// HoldPage is the body of GET /api/v1/holds: the holds in key order, and
// whether more matched than the limit.
type HoldPage struct {
	Holds []HoldSummary `json:"holds"`
	More  bool          `json:"more"`
}

// HoldActionRequest is the body of POST /api/v1/holds/{key}/release and
// /skip. Reason is required (audit); EventID names the held event of a
// skip.
type HoldActionRequest struct {
	Reason  string `json:"reason"`
	EventID string `json:"eventId,omitempty"`
	DryRun  bool   `json:"dryRun,omitempty"`
}

// The statuses of a range replay.
const (
	ReplayPending = "PENDING" // waiting for a processor of its function
	ReplayRunning = "RUNNING"
	ReplayDone    = "DONE"
)

// Replay is an operator's range replay: committed events of one
// context given again to one function only, as its processor reads them
// from the store, at most Rate per second. A replayed event that still
// fails becomes an ordinary ExecutionFailed record. It selects either the
// versions FromVersion..ToVersion of one aggregate (AggregateType and
// AggregateID set), or the stream sequences FromSeq..ToSeq of the
// context's stream, narrowed by AggregateType, EventNames and the commit
// time range FromTime..ToTime (epoch ms, 0 = open). Progress is kept in the
// request, so a processor restarted resumes it where it stopped.
type Replay struct {
	ID            string   `json:"id"`
	Context       string   `json:"context"`
	Processor     string   `json:"processor"`
	Function      string   `json:"function"`
	AggregateType string   `json:"aggregateType,omitempty"`
	AggregateID   string   `json:"aggregateId,omitempty"`
	FromVersion   uint64   `json:"fromVersion,omitempty"`
	ToVersion     uint64   `json:"toVersion,omitempty"`
	FromSeq       uint64   `json:"fromSeq,omitempty"`
	ToSeq         uint64   `json:"toSeq,omitempty"`
	EventNames    []string `json:"eventNames,omitempty"`
	FromTime      int64    `json:"fromTime,omitempty"`
	ToTime        int64    `json:"toTime,omitempty"`
	Rate          float64  `json:"rate,omitempty"`
	Actor         string   `json:"actor"`
	Reason        string   `json:"reason"`
	Created       int64    `json:"created"`

	Status string `json:"status"`
	// Next is the next version (aggregate range) or sequence to replay.
	Next uint64 `json:"next"`
	// Replayed and Failed count the events given to the function, and
	// those of them that failed and were recorded.
	Replayed uint64     `json:"replayed"`
	Failed   uint64     `json:"failed"`
	Updated  int64      `json:"updated,omitempty"`
	Claim    *HoldClaim `json:"claim,omitempty"`
}

// ByAggregate reports whether the request selects one aggregate's versions.
func (r *Replay) ByAggregate() bool { return r.AggregateID != "" }

// First and Last are the range's bounds (versions or sequences).
func (r *Replay) First() uint64 {
	if r.ByAggregate() {
		return r.FromVersion
	}
	return r.FromSeq
}

// Last is the range's last version or sequence.
func (r *Replay) Last() uint64 {
	if r.ByAggregate() {
		return r.ToVersion
	}
	return r.ToSeq
}

// PlannedEvent is one event a range replay would give to its function.
type PlannedEvent struct {
	EventID       string `json:"eventId"`
	Name          string `json:"name"`
	AggregateType string `json:"aggregateType"`
	AggregateID   string `json:"aggregateId"`
	Version       uint64 `json:"version"`
	Seq           uint64 `json:"seq"`
	CreateTime    int64  `json:"createTime"`
}

// ReplayPlan is a dry run of a range replay.
type ReplayPlan struct {
	// Events are the first selected events, at most the limit asked for.
	Events []PlannedEvent `json:"events"`
	// Count is how many events are selected in the part of the range read.
	Count int `json:"count"`
	// Truncated reports that the range was read only up to Scanned (a
	// sequence range longer than MaxPlanScan).
	Truncated bool   `json:"truncated"`
	Scanned   uint64 `json:"scanned"`
}

// ReplayStart is the body of POST /api/v1/replays: the selection of a
// Replay, its reason (required: a range replay is audited; the actor is
// the caller) and whether to dry-run it. ID is the request id: sending the
// same one again returns the stored replay instead of starting another.
type ReplayStart struct {
	ID            string   `json:"id"`
	Context       string   `json:"context"`
	Processor     string   `json:"processor"`
	Function      string   `json:"function"`
	AggregateType string   `json:"aggregateType,omitempty"`
	AggregateID   string   `json:"aggregateId,omitempty"`
	FromVersion   uint64   `json:"fromVersion,omitempty"`
	ToVersion     uint64   `json:"toVersion,omitempty"`
	FromSeq       uint64   `json:"fromSeq,omitempty"`
	ToSeq         uint64   `json:"toSeq,omitempty"`
	EventNames    []string `json:"eventNames,omitempty"`
	FromTime      int64    `json:"fromTime,omitempty"`
	ToTime        int64    `json:"toTime,omitempty"`
	Rate          float64  `json:"rate,omitempty"`
	Reason        string   `json:"reason"`
	DryRun        bool     `json:"dryRun,omitempty"`
}

// Replay returns the replay s asks for, by actor at created (epoch ms).
func (s *ReplayStart) Replay(actor string, created int64) Replay {
	return Replay{ID: s.ID, Context: s.Context, Processor: s.Processor, Function: s.Function,
		AggregateType: s.AggregateType, AggregateID: s.AggregateID, FromVersion: s.FromVersion, ToVersion: s.ToVersion,
		FromSeq: s.FromSeq, ToSeq: s.ToSeq, EventNames: s.EventNames, FromTime: s.FromTime, ToTime: s.ToTime,
		Rate: s.Rate, Actor: actor, Reason: s.Reason, Created: created}
}

// ReplayStarted is the answer of POST /api/v1/replays: the stored replay
// (Created false when the id was used before for the same replay), or,
// for a dry run, the plan.
type ReplayStarted struct {
	Replay  *Replay     `json:"replay,omitempty"`
	Created bool        `json:"created"`
	Plan    *ReplayPlan `json:"plan,omitempty"`
}

// HoldQuery selects holds for GET /api/v1/holds; empty fields match
// everything (Processor and Function need Context). Limit 0 is the
// server's default (100), at most 1000.
type HoldQuery struct {
	Context, Processor, Function, Record string
	Limit                                int
}

// Values returns q as query parameters.
func (q HoldQuery) Values() url.Values {
	v := url.Values{}
	for _, p := range []struct{ k, v string }{{"context", q.Context}, {"processor", q.Processor}, {"function", q.Function}, {"record", q.Record}} {
		if p.v != "" {
			v.Set(p.k, p.v)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}
