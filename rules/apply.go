package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
)

// Records is what Apply reads: the records a filter selects and each
// record's state. *projection.Index satisfies it.
type Records interface {
	List(q api.Query) (api.Page, error)
	Count(f api.Filter) (int, error)
	Get(ctx context.Context, id string) (api.View, error)
}

// Executor runs a command on a record. *aggregate.Service satisfies it.
type Executor interface {
	Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error)
}

// ApplyOptions configure Apply.
type ApplyOptions struct {
	// DryRun reports what would happen and changes nothing.
	DryRun bool
	// RequestID names a real run: each record gets one command per
	// (rule, request id), so running it again applies nothing twice.
	// Required unless DryRun.
	RequestID string
	// Limit bounds the records touched (default and at most MaxApply).
	Limit int
	// RatePerSecond paces a real run (default api.DefaultBatchRate, at
	// most api.MaxBatchRate).
	RatePerSecond float64
	// Actor and Reason go on every command (the reason defaults to the
	// rule's) and on the rule's audit.
	Actor, Reason string
	// Now is the time a dry run decides at (default the system clock).
	Now time.Time
	// Emit, if set, receives each record's outcome as it happens.
	Emit func(api.BatchOutcome)
}

// MaxApply bounds the records one Apply touches.
const MaxApply = 10000

// batchNamespace derives the command ids of applies.
var batchNamespace = uuid.MustParse("4f0b8a57-63f4-4c43-9a0e-3b2b1f7f1c21")

// FilterOf is the record filter of r's match.
func FilterOf(r *api.Rule) api.Filter {
	if r.Match.Fingerprint != "" {
		return api.Filter{Fingerprint: r.Match.Fingerprint}
	}
	return api.Filter{FunctionContext: r.Match.FunctionContext, Processor: r.Match.Processor, Function: r.Match.Function, ErrorCode: r.Match.ErrorCode}
}

// Apply runs rule r on the existing records it matches, the way a batch
// does: oldest failure first, at most o.Limit of them, its command
// (CommandOf) on each, paced at o.RatePerSecond, each with a command id
// derived from the rule, the request id and the record. A dry run decides
// each command on the record's state without appending (outcomes
// would-apply and would-reject). A HOLD_UNTIL_DEPLOY (park until deploy)
// rule needs no command: every record it matches is parked already, and
// each is reported with the outcome "held" (the wire's word; the batch's
// command is "hold"). Records that have succeeded are left out.
//
// Errors wrap ErrInvalidRule (no request id for a real run, a limit or rate
// out of range) or come from the record source; a failure of one record's
// command is its outcome, not an error. When ctx ends the result is
// returned with Complete false.
func Apply(ctx context.Context, r api.Rule, records Records, exec Executor, o ApplyOptions) (api.BatchResult, error) {
	switch {
	case !o.DryRun && o.RequestID == "":
		return api.BatchResult{}, invalid("a real apply needs a requestId, so that sending it again does not run it twice")
	case !bounds.Within(o.Limit, 0, MaxApply):
		return api.BatchResult{}, invalid("limit must be between 1 and %d, got %d", MaxApply, o.Limit)
	case !bounds.Within(o.RatePerSecond, 0, api.MaxBatchRate):
		return api.BatchResult{}, invalid("ratePerSecond must be between 0 (the default %g) and %g, got %g", api.DefaultBatchRate, api.MaxBatchRate, o.RatePerSecond)
	}
	o.Limit = cmp.Or(o.Limit, MaxApply)
	o.RatePerSecond = cmp.Or(o.RatePerSecond, api.DefaultBatchRate)
	o.Reason = cmp.Or(o.Reason, fmt.Sprintf("rule %s (%s): %s", r.ID, r.Action, r.Reason))
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	cmd, hasCommand := CommandOf(&r)
	name := "hold"
	if hasCommand {
		name = cmd.CommandName()
	}
	res := api.BatchResult{Command: name, RequestID: o.RequestID, DryRun: o.DryRun, Counts: map[string]int{}, Records: []api.BatchOutcome{}}
	ids, matched, err := matching(r, records, o.Limit)
	if err != nil {
		return res, err
	}
	res.Matched = matched
	emit := func(out api.BatchOutcome) {
		res.Records = append(res.Records, out)
		res.Counts[out.Outcome]++
		if o.Emit != nil {
			o.Emit(out)
		}
	}
	limiter := rate.NewLimiter(rate.Limit(o.RatePerSecond), 1)
	for _, id := range ids {
		switch {
		case !hasCommand:
			emit(api.BatchOutcome{ID: id, Outcome: "held"})
		case o.DryRun:
			emit(dryRun(ctx, records, id, cmd, o.Now))
		default:
			if err := limiter.Wait(ctx); err != nil {
				return res, nil // Complete stays false
			}
			meta := aggregate.Meta{
				CommandID: uuid.NewSHA1(batchNamespace, []byte(r.ID+"\x00"+o.RequestID+"\x00"+id)).String(),
				RequestID: o.RequestID, Actor: o.Actor, Reason: o.Reason, Headers: map[string]string{"rule": r.ID},
			}
			emit(runOne(ctx, exec, id, cmd, meta))
		}
	}
	res.Complete = ctx.Err() == nil
	return res, nil
}

// matching lists up to limit ids of the unfinished records r matches,
// oldest failure first, and counts them all.
func matching(r api.Rule, records Records, limit int) ([]string, int, error) {
	var ids []string
	matched := 0
	q := api.Query{Filter: FilterOf(&r), Limit: api.MaxLimit, Sort: api.Sort{Field: api.SortExecuteAt}}
	for {
		page, err := records.List(q)
		if err != nil {
			return nil, 0, err
		}
		for _, it := range page.Items {
			if it.Status == aggregate.StatusSucceeded {
				continue
			}
			matched++
			if len(ids) < limit {
				ids = append(ids, it.ID)
			}
		}
		if page.Next == "" {
			return ids, matched, nil
		}
		q.Cursor = page.Next
	}
}

func dryRun(ctx context.Context, records Records, id string, cmd aggregate.Command, now time.Time) api.BatchOutcome {
	v, err := records.Get(ctx, id)
	if err != nil {
		return api.BatchOutcome{ID: id, Outcome: api.OutcomeFailed, Code: "NotFound", Message: "the record has no view any more"}
	}
	if _, err := aggregate.Decide(v.State, cmd, now); err != nil {
		var ae *aggregate.Error
		if errors.As(err, &ae) {
			return api.BatchOutcome{ID: id, Outcome: api.OutcomeWouldNot, Code: ae.Code(), Message: ae.Message, Version: v.Version}
		}
		return api.BatchOutcome{ID: id, Outcome: api.OutcomeFailed, Code: "Internal", Message: "the command could not be decided"}
	}
	return api.BatchOutcome{ID: id, Outcome: api.OutcomeWould, Version: v.Version}
}

func runOne(ctx context.Context, exec Executor, id string, cmd aggregate.Command, meta aggregate.Meta) api.BatchOutcome {
	res, err := exec.Execute(ctx, id, cmd, meta)
	if o, ok := api.OutcomeOf(id, res, err); ok {
		return o
	}
	return api.BatchOutcome{ID: id, Outcome: api.OutcomeFailed, Code: "Unavailable", Message: "the command failed; run the apply again with the same requestId"}
}

// Apply runs rule id with Apply and, for a real run, adds it to the
// rule's audit with the number of records it changed. Errors as Get and
// Apply; a removed or expired rule is not applied (ErrInvalidRule).
func (s *Store) Apply(ctx context.Context, id string, records Records, exec Executor, o ApplyOptions) (api.BatchResult, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return api.BatchResult{}, err
	}
	if o.Now.IsZero() {
		o.Now = s.clock.Now()
	}
	if !Live(&r, o.Now) {
		return api.BatchResult{}, invalid("rule %s is removed or expired; add a new rule to act again", id)
	}
	res, err := Apply(ctx, r, records, exec, o)
	if err != nil || o.DryRun {
		return res, err
	}
	if _, err := s.RecordApply(context.WithoutCancel(ctx), id, o.Actor, o.Reason, res.Counts[api.OutcomeApplied]); err != nil {
		return res, fmt.Errorf("apply of rule %s ran but its audit was not written: %w", id, err)
	}
	return res, nil
}
