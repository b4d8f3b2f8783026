package server

import (
	"context"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/retention"
)

// Retired gives the tallies of the records retention removed;
// *retention.Sweeper satisfies it.
type Retired interface {
	Tallies(ctx context.Context) ([]retention.Tally, error)
}

var _ Retired = (*retention.Sweeper)(nil)

// byGroupOnly reports whether f selects by function, error code and
// fingerprint fields only: the fields a tally of removed records has.
func byGroupOnly(f api.Filter) bool {
	g := api.Filter{FunctionContext: f.FunctionContext, Processor: f.Processor, Function: f.Function, ErrorCode: f.ErrorCode, Fingerprint: f.Fingerprint}
	return f == g
}

// addRetired adds to sum the records retention removed that f selects:
// Summary.Removed, each group's Removed, and groups whose records were
// all removed (Total 0). Tallies that cannot be read leave the summary as
// the index gives it (logged): a summary never fails for them.
func (s *Server) addRetired(ctx context.Context, f api.Filter, sum *api.Summary) {
	if s.cfg.Retired == nil || !byGroupOnly(f) {
		return
	}
	tallies, err := s.cfg.Retired.Tallies(ctx)
	if err != nil {
		s.log.Warn("summary: the tallies of removed records cannot be read; the summary leaves them out", "err", err)
		return
	}
	for _, t := range tallies {
		fn := t.Function
		if !match(f.FunctionContext, fn.ContextName) || !match(f.Processor, fn.ProcessorName) || !match(f.Function, fn.Name) ||
			!match(f.ErrorCode, t.ErrorCode) || !match(f.Fingerprint, t.Fingerprint) {
			continue
		}
		n := t.Total()
		sum.Removed += n
		g := findGroup(sum, fn.ContextName, fn.ProcessorName, fn.Name, t.ErrorCode)
		g.Removed += n
		if sum.Fingerprints != nil && t.Fingerprint != "" {
			fg := findFingerprint(sum, t)
			fg.Removed += n
		}
	}
}

func match(want, have string) bool { return want == "" || want == have }

func findGroup(sum *api.Summary, ctx, proc, fn, code string) *api.FailureGroup {
	for i := range sum.Groups {
		g := &sum.Groups[i]
		if g.FunctionContext == ctx && g.Processor == proc && g.Function == fn && g.ErrorCode == code {
			return g
		}
	}
	sum.Groups = append(sum.Groups, api.FailureGroup{FunctionContext: ctx, Processor: proc, Function: fn, ErrorCode: code})
	return &sum.Groups[len(sum.Groups)-1]
}

func findFingerprint(sum *api.Summary, t retention.Tally) *api.FingerprintGroup {
	for i := range sum.Fingerprints {
		g := &sum.Fingerprints[i]
		if g.Fingerprint == t.Fingerprint && g.Processor == t.Function.ProcessorName && g.Function == t.Function.Name && g.FunctionContext == t.Function.ContextName {
			return g
		}
	}
	sum.Fingerprints = append(sum.Fingerprints, api.FingerprintGroup{Fingerprint: t.Fingerprint, FunctionContext: t.Function.ContextName,
		Processor: t.Function.ProcessorName, Function: t.Function.Name, ErrorCode: t.ErrorCode, FirstSeen: t.FirstAt, LastSeen: t.LastAt, ByStatus: map[aggregate.Status]int{}})
	return &sum.Fingerprints[len(sum.Fingerprints)-1]
}
