package bench

import (
	"context"
	"fmt"
	"time"
)

// Result is one scenario's outcome.
type Result struct {
	Scenario string       `json:"scenario"`
	Title    string       `json:"title"`
	Baseline string       `json:"baseline,omitempty"`
	Raw      *Measurement `json:"raw,omitempty"`
	Amends   Measurement  `json:"amends"`
	// Ratio is amends throughput over raw throughput; 0 without a baseline.
	Ratio float64            `json:"ratio,omitempty"`
	Notes map[string]float64 `json:"notes,omitempty"`
}

// Runner runs scenarios.
type Runner struct {
	// Env is where they run.
	Env *Env
	// Duration is the measured time per scenario, split between its sides.
	Duration time.Duration
	// Rounds alternates the sides this many times (default 2).
	Rounds int
	// Progress, if set, is told when a scenario starts.
	Progress func(Scenario)
}

// Run prepares and measures each scenario in turn. It stops at the first
// failure and returns the results so far with an error naming the scenario.
func (r *Runner) Run(ctx context.Context, scenarios []Scenario) ([]Result, error) {
	rounds := max(r.Rounds, 1)
	if r.Rounds == 0 {
		rounds = 2
	}
	var out []Result
	for _, s := range scenarios {
		if r.Progress != nil {
			r.Progress(s)
		}
		res, err := r.runOne(ctx, s, rounds)
		if err != nil {
			return out, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		out = append(out, res)
	}
	return out, nil
}

func (r *Runner) runOne(ctx context.Context, s Scenario, rounds int) (Result, error) {
	pair, err := s.Prepare(ctx, r.Env)
	if err != nil {
		return Result{}, fmt.Errorf("prepare: %w", err)
	}
	if pair.Close != nil {
		defer pair.Close()
	}
	res := Result{Scenario: s.Name, Title: s.Title, Baseline: s.Baseline, Notes: pair.Notes}
	res.Amends.Side = orDefault(pair.AmendsName, "amends")
	sides := 1
	if pair.Raw != nil {
		sides = 2
		res.Raw = &Measurement{Side: orDefault(pair.RawName, "raw")}
	}
	slice := r.Duration / time.Duration(rounds*sides)
	workers := max(r.Env.Concurrency, 1)
	before := func(side string) Op {
		if pair.Before == nil {
			return nil
		}
		return func(ctx context.Context, w, i int) error { return pair.Before(ctx, side, w, i) }
	}
	for range rounds {
		if pair.Raw != nil {
			if err := res.Raw.run(ctx, pair.Raw, before("raw"), workers, slice); err != nil {
				return Result{}, fmt.Errorf("%s side: %w", res.Raw.Side, err)
			}
		}
		if err := res.Amends.run(ctx, pair.Amends, before("amends"), workers, slice); err != nil {
			return Result{}, fmt.Errorf("%s side: %w", res.Amends.Side, err)
		}
	}
	res.Amends.finish(pair.PerOp, workers, pair.Before != nil)
	if res.Raw != nil {
		res.Raw.finish(pair.PerOp, workers, pair.Before != nil)
		if res.Raw.PerSec > 0 {
			res.Ratio = res.Amends.PerSec / res.Raw.PerSec
		}
	}
	return res, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
