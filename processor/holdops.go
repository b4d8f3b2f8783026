package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/text"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// Holds is the operators' view of the holds bucket: list, release, skip.
// It works from any process with the JetStream (the control plane); the
// processors that own the functions run the releases. Safe for concurrent
// use.
type Holds struct {
	kv  *holds
	now func() time.Time
}

// HoldsOption configures OpenHolds.
type HoldsOption func(*holdsOptions)

type holdsOptions struct {
	quarantine *quarantine.Quarantine
	now        func() time.Time
}

// WithHoldsQuarantine records the stored holds that do not validate
// (DecodeHold) in q, the process's quarantine (default: a quarantine on
// js).
func WithHoldsQuarantine(q *quarantine.Quarantine) HoldsOption {
	return func(o *holdsOptions) { o.quarantine = q }
}

// OpenHolds binds the holds bucket, creating it (with replicas, 1 if 0)
// if no processor has yet.
func OpenHolds(ctx context.Context, js jetstream.JetStream, replicas int, opts ...HoldsOption) (*Holds, error) {
	o := holdsOptions{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	var kopts []kvstore.Option
	if o.quarantine != nil {
		kopts = append(kopts, kvstore.WithRecorder(o.quarantine))
	}
	kv, err := holdsBucket(ctx, js, replicas, kopts...)
	if err != nil {
		return nil, err
	}
	return &Holds{kv: kv, now: o.now}, nil
}

// HoldFilter selects holds; empty fields match everything.
type HoldFilter struct {
	Context, Processor, Function string
	// Record selects the hold whose head is this record id.
	Record string
}

// MaxHoldList bounds the holds one List returns.
const MaxHoldList = 1000

// List returns the holds matching f, at most limit (1 to MaxHoldList),
// ordered by key, and whether more matched. A stored hold that does not
// validate is listed as the recovered hold its processor writes in its
// place (Recovered set, no head), so that it can be seen and released.
func (hs *Holds) List(ctx context.Context, f HoldFilter, limit int) ([]api.Hold, bool, error) {
	if !bounds.Within(limit, 1, MaxHoldList) {
		return nil, false, fmt.Errorf("limit must be between 1 and %d, got %d: %w", MaxHoldList, limit, ErrInvalidOption)
	}
	pattern := f.pattern()
	// The whole history (one revision per key) read up to the leader's
	// last revision: a watch's own end signal comes early while holds
	// change, and then misses the holds being released (see kvwatch).
	live := make(map[string]api.Hold)
	err := hs.kv.Scan(ctx, pattern, func(key string, h api.Hold, rev uint64, err error) {
		if err != nil {
			k, kerr := parseHoldKey(key)
			if kerr != nil {
				return // no function's hold: only in the quarantine
			}
			h = recoveredHold(k, rev, err.Error(), hs.now())
		}
		if f.selects(&h) {
			live[key] = h
		}
	})
	if err != nil {
		return nil, false, fmt.Errorf("list holds: %w", err)
	}
	out := make([]api.Hold, 0, len(live))
	for _, h := range live {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b api.Hold) int { return strings.Compare(a.Key(), b.Key()) })
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// Get returns the hold of key, or an error matching ErrHoldNotFound. A
// stored hold that does not validate is returned as the recovered hold
// its processor writes in its place (see List).
func (hs *Holds) Get(ctx context.Context, key string) (api.Hold, error) {
	h, _, err := hs.get(ctx, key)
	return h, err
}

// get is Get that also returns the revision of a stored hold that does
// not validate (0 for a valid one).
func (hs *Holds) get(ctx context.Context, key string) (api.Hold, uint64, error) {
	h, rev, err := hs.kv.Get(ctx, key)
	switch {
	case errors.Is(err, kvstore.ErrNotFound), errors.Is(err, kvstore.ErrInvalidKey):
		return api.Hold{}, 0, fmt.Errorf("hold %s: %w", key, ErrHoldNotFound)
	case errors.Is(err, kvstore.ErrInvalid):
		k, kerr := parseHoldKey(key)
		if kerr != nil {
			return api.Hold{}, 0, fmt.Errorf("hold %s: the key is no hold's (%v): %w", kvstore.QuoteKey(key), kerr, ErrHoldNotFound)
		}
		return recoveredHold(k, rev, err.Error(), hs.now()), rev, nil
	case err != nil:
		return api.Hold{}, 0, fmt.Errorf("read hold %s: %w", key, err)
	}
	return h, 0, nil
}

// HoldAction is an operator's action on a hold. Actor and Reason are
// required and stored with it (and, for a release, on the head record).
type HoldAction struct {
	Actor, Reason string
	// DryRun reports what the action would do without doing it.
	DryRun bool
	// Now is when the action happens.
	Now time.Time
}

func (a HoldAction) check() error {
	if strings.TrimSpace(a.Actor) == "" {
		return fmt.Errorf("actor must not be empty: %w", ErrInvalidOption)
	}
	if strings.TrimSpace(a.Reason) == "" {
		return fmt.Errorf("reason must not be empty: an operator action on a hold is audited: %w", ErrInvalidOption)
	}
	if err := text.Line(a.Actor, 256); err != nil {
		return fmt.Errorf("actor %v: %w", err, ErrInvalidOption)
	}
	if err := text.Line(a.Reason, text.MaxReasonBytes); err != nil {
		return fmt.Errorf("reason %v: %w", err, ErrInvalidOption)
	}
	return nil
}

// RecordCommands runs commands on ExecutionFailed records;
// *aggregate.Service satisfies it.
type RecordCommands interface {
	Records
	Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error)
}

// Release releases the hold key without replaying its head: the head
// record is marked resolved in its own history (a ForcePrepareCompensation
// if it is FAILED, then ApplyExecutionSuccess, both carrying the actor and
// reason and the HeaderResolve header, so that no replay runs for that
// prepare) and the hold is set releasing, which its processor then gives
// to the function in order. A SUCCEEDED or missing head record is left as
// it is. Errors: ErrHoldNotFound, ErrInvalidOption (no actor or reason),
// the record's refusal (an *aggregate.Error), or the store's.
func (hs *Holds) Release(ctx context.Context, key string, records RecordCommands, a HoldAction) (api.ReleasePlan, error) {
	if err := a.check(); err != nil {
		return api.ReleasePlan{}, err
	}
	h, invalidRev, err := hs.get(ctx, key)
	if err != nil {
		return api.ReleasePlan{}, err
	}
	plan := api.ReleasePlan{Hold: h, DryRun: a.DryRun, Commands: []string{}}
	if invalidRev != 0 || h.Head.Record == "" {
		// A recovered hold (or a stored one that does not validate, which
		// becomes one): no head record to resolve; release what it holds.
		return hs.releaseRecovered(ctx, key, h, invalidRev, plan, a)
	}
	st, _, err := records.Get(ctx, h.Head.Record)
	switch {
	case errors.Is(err, aggregate.ErrNotFound):
	case err != nil:
		return plan, fmt.Errorf("read head record %s: %w", h.Head.Record, err)
	default:
		plan.HeadStatus = st.Status
	}
	if !h.Releasing {
		plan.Commands = resolveCommands(plan.HeadStatus, st, a.Now)
	}
	if a.DryRun {
		return plan, nil
	}
	if err := resolveHead(ctx, records, h.Head, st, plan.Commands, a); err != nil {
		return plan, err
	}
	audit := api.HoldAudit{Actor: a.Actor, Reason: a.Reason, At: a.Now.UnixMilli()}
	head := h.Head
	h, err = updateHold(ctx, hs.kv, key, func(h *api.Hold) (bool, error) {
		if h.Head != head {
			return false, errUnchanged // waiting on another head now
		}
		if h.Releasing && h.Claim == nil {
			return false, errUnchanged // released already, not claimed: a processor takes it up
		}
		// Releasing and claimed: a claim of an instance that is gone would
		// keep it from being released until it ends; this release frees it.
		h.Releasing, h.Claim, h.Released = true, nil, &audit
		return false, nil
	})
	if errors.Is(err, errNoHold) {
		return plan, nil // released already
	}
	plan.Hold = h
	return plan, err
}

// resolveCommands are the commands that mark a head record in status
// resolved: none for a record that succeeded or is gone.
func resolveCommands(status aggregate.Status, st aggregate.State, now time.Time) []string {
	switch {
	case status == aggregate.StatusFailed || (status == aggregate.StatusPrepared && st.Timeout(now)):
		return []string{aggregate.NameForcePrepareCompensation, aggregate.NameApplyExecutionSuccess}
	case status == aggregate.StatusPrepared:
		return []string{aggregate.NameApplyExecutionSuccess}
	}
	return []string{}
}

// resolveHead marks the hold's head record (in state st) resolved by
// commands, as a's actor, with command ids fixed by the head.
func resolveHead(ctx context.Context, records RecordCommands, head api.HoldHead, st aggregate.State, commands []string, a HoldAction) error {
	meta := func(cmd string) aggregate.Meta {
		return aggregate.Meta{CommandID: "release:" + cmd + ":" + head.Record + ":" + fmt.Sprint(head.Since), Actor: a.Actor, Reason: a.Reason,
			Headers: map[string]string{HeaderResolve: "release"}}
	}
	attempt, prepared := st.Attempt(), st.PreparedVersion
	for _, cmd := range commands {
		switch cmd {
		case aggregate.NameForcePrepareCompensation:
			res, err := records.Execute(ctx, head.Record, aggregate.ForcePrepareCompensation{}, meta(cmd))
			if err != nil {
				return fmt.Errorf("mark head record %s resolved: %w", head.Record, err)
			}
			attempt, prepared = res.State.Attempt(), res.Version
		case aggregate.NameApplyExecutionSuccess:
			c := aggregate.ApplyExecutionSuccess{ExecuteAt: max(a.Now.UnixMilli(), 1), Attempt: attempt, PreparedVersion: prepared}
			if _, err := records.Execute(ctx, head.Record, c, meta(cmd)); err != nil {
				return fmt.Errorf("mark head record %s resolved: %w", head.Record, err)
			}
		}
	}
	return nil
}

// releaseRecovered releases a recovered hold (or writes the recovered hold
// in place of a stored one that does not validate, at revision rev, and
// releases it): no head to resolve, the held events given in order.
func (hs *Holds) releaseRecovered(ctx context.Context, key string, h api.Hold, rev uint64, plan api.ReleasePlan, a HoldAction) (api.ReleasePlan, error) {
	if a.DryRun {
		return plan, nil
	}
	audit := api.HoldAudit{Actor: a.Actor, Reason: a.Reason, At: a.Now.UnixMilli()}
	if rev != 0 {
		h.Releasing, h.Claim, h.Released = true, nil, &audit
		if _, err := hs.kv.Update(ctx, key, h, rev); err != nil {
			return plan, fmt.Errorf("release hold %s: %w", key, err)
		}
		plan.Hold = h
		return plan, nil
	}
	h, err := updateHold(ctx, hs.kv, key, func(h *api.Hold) (bool, error) {
		if h.Head.Record != "" || h.Releasing && h.Claim == nil {
			return false, errUnchanged
		}
		h.Releasing, h.Claim, h.Released = true, nil, &audit
		return false, nil
	})
	if errors.Is(err, errNoHold) {
		return plan, nil
	}
	plan.Hold = h
	return plan, err
}

// Skip removes held event eventID from hold key, so the function never
// gets it from this hold; the skip is kept on the hold with the actor and
// reason (the last MaxHoldAudit skips). It returns the hold after the
// skip (as it would be, for a dry run). Errors: ErrHoldNotFound,
// ErrNotHeld, ErrInvalidOption (no actor or reason).
func (hs *Holds) Skip(ctx context.Context, key, eventID string, a HoldAction) (api.Hold, error) {
	if err := a.check(); err != nil {
		return api.Hold{}, err
	}
	change := func(h *api.Hold) (bool, error) {
		i := slices.IndexFunc(h.Held, func(r api.HeldEvent) bool { return r.EventID == eventID })
		if i < 0 {
			return false, fmt.Errorf("event %s is not held by hold %s (its head and the released are not): %w", eventID, key, ErrNotHeld)
		}
		h.Skipped = append(h.Skipped, api.HeldSkip{HeldEvent: h.Held[i], HoldAudit: api.HoldAudit{Actor: a.Actor, Reason: a.Reason, At: a.Now.UnixMilli()}})
		if len(h.Skipped) > MaxHoldAudit {
			h.Skipped = h.Skipped[len(h.Skipped)-MaxHoldAudit:]
		}
		holdRemove(h, eventID)
		return false, nil
	}
	if a.DryRun {
		h, err := hs.Get(ctx, key)
		if err != nil {
			return api.Hold{}, err
		}
		_, err = change(&h)
		return h, err
	}
	h, err := updateHold(ctx, hs.kv, key, change)
	if errors.Is(err, errNoHold) {
		return api.Hold{}, fmt.Errorf("hold %s: %w", key, ErrHoldNotFound)
	}
	return h, err
}

// pattern is the key pattern of the holds f may select: a function's, a
// context's or all.
func (f HoldFilter) pattern() string {
	switch {
	case f.Context == "":
		return ">"
	case f.Processor != "" && f.Function != "":
		return f.Context + "." + f.Processor + "." + f.Function + ".>"
	}
	return f.Context + ".>"
}

// selects reports whether f selects hold h (the key pattern selected its
// context).
func (f HoldFilter) selects(h *api.Hold) bool {
	return (f.Processor == "" || h.Processor == f.Processor) && (f.Function == "" || h.Function == f.Function) &&
		(f.Record == "" || h.Head.Record == f.Record)
}
