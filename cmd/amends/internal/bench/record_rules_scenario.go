package bench

import (
	"context"
	"fmt"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rules"
)

// benchRules is how many operator rules the record-rules scenario loads.
const benchRules = 1000

func init() {
	Register(Scenario{
		Name:     "record-rules",
		Title:    "the record scenario with 1 000 operator rules loaded (500 by fingerprint, 500 by function and code; none matches), per failure",
		Baseline: "the record scenario without rules, measured in the same run",
		Prepare:  prepareRecordRules,
	})
}

// loadedRules returns benchRules rules that match none of the bench's
// failures, so every failure pays both look-ups and acts on nothing.
func loadedRules() *rules.Set {
	list := make([]api.Rule, 0, benchRules)
	for i := range benchRules {
		r := api.Rule{ID: fmt.Sprintf("r-%012x", i), Action: rules.MarkUnrecoverable, Reason: "bench", CreatedAt: int64(i)}
		if i%2 == 0 {
			r.Match.Fingerprint = fmt.Sprintf("fp1-%016x", i)
		} else {
			r.Match = api.RuleMatch{FunctionContext: benchContext, Processor: fmt.Sprintf("P%d", i), Function: "charge", ErrorCode: "Unclassified"}
		}
		list = append(list, r)
	}
	return rules.NewSet(list)
}

// A record-rules operation is a record operation (see prepareRecord) on
// both sides; the amends side's recorder matches each failure against
// benchRules rules. The ratio is the cost of rule matching.
func prepareRecordRules(ctx context.Context, env *Env) (*Pair, error) {
	st, closeFn, err := newStore(ctx, env, "recrules", benchContext, aggregate.Context)
	if err != nil {
		return nil, err
	}
	records := aggregate.NewService(st)
	set := loadedRules()
	batch := recordBatch(env)
	last := &lastStop{}
	typ := func(side string, w, i int) string { return fmt.Sprintf("%s%d_%d", side, w, i) }
	op := func(side string, opts ...recorder.Option) Op {
		return func(ctx context.Context, w, i int) error {
			rec, err := recorder.New(records, opts...)
			if err != nil {
				return err
			}
			p, err := newRecordingProcessor(env, st, rec)
			if err != nil {
				return err
			}
			if err := last.runProcessor(ctx, env, st, w, p, charge("R"+typ(side, w, i), typ(side, w, i)), fail, nil, rec.Metrics().Recorded.Load, batch); err != nil {
				return err
			}
			if n := rec.Metrics().RuleMatches.Load(); n != 0 {
				return fmt.Errorf("bench: %d failures matched a rule; the loaded rules must match none", n)
			}
			return nil
		}
	}
	return &Pair{
		PerOp: batch,
		Close: func() { last.all(); closeFn() },
		Before: func(ctx context.Context, side string, w, i int) error {
			last.stop(w)
			return publishBatch(ctx, env.JS, st, typ(side, w, i), batch)
		},
		Raw:        op("raw"),
		Amends:     op("amends", recorder.WithRules(set)),
		RawName:    "no rules",
		AmendsName: fmt.Sprintf("%d rules", set.Len()),
	}, nil
}
