package bench

import (
	"context"
	"fmt"
	"time"
)

// Result is one scenario's outcome at one concurrency.
type Result struct {
	Scenario string `json:"scenario"`
	Title    string `json:"title"`
	Baseline string `json:"baseline,omitempty"`
	// Concurrency is the number of workers per side.
	Concurrency int          `json:"concurrency"`
	Raw         *Measurement `json:"raw,omitempty"`
	// Floor is the baseline doing the amends side's whole job (Pair.Floor).
	Floor *Measurement `json:"floor,omitempty"`
	// Peer is the Watermill side, for the scenarios that have one.
	Peer   *Measurement `json:"peer,omitempty"`
	Amends Measurement  `json:"amends"`
	// Ratio is amends throughput over raw throughput; 0 without a baseline.
	Ratio float64 `json:"ratio,omitempty"`
	// FloorRatio is amends throughput over the floor's; 0 without one.
	FloorRatio float64 `json:"floorRatio,omitempty"`
	// PeerRatio is amends throughput over peer throughput; 0 without a
	// peer.
	PeerRatio float64            `json:"peerRatio,omitempty"`
	Notes     map[string]float64 `json:"notes,omitempty"`
}

// Runner runs scenarios.
type Runner struct {
	// Env is where they run.
	Env *Env
	// Duration is the measured time per scenario, split between its sides.
	Duration time.Duration
	// Rounds alternates the sides this many times (default 2).
	Rounds int
	// Sweep, if set, runs each scenario once per concurrency listed, each
	// with fresh fixtures, instead of once at Env.Concurrency.
	Sweep []int
	// Progress, if set, is told when a scenario starts at a concurrency.
	Progress func(s Scenario, concurrency int)
}

// Run prepares and measures each scenario in turn, at each concurrency of
// the sweep. It stops at the first failure and returns the results so far
// with an error naming the scenario. It changes Env.Concurrency while it
// runs and restores it; not safe for concurrent use with the same Env.
func (r *Runner) Run(ctx context.Context, scenarios []Scenario) ([]Result, error) {
	rounds := max(r.Rounds, 1)
	if r.Rounds == 0 {
		rounds = 2
	}
	levels := r.Sweep
	if len(levels) == 0 {
		levels = []int{max(r.Env.Concurrency, 1)}
	}
	saved := r.Env.Concurrency
	r.Env.indexes = &indexCache{}
	defer func() { r.Env.Concurrency, r.Env.indexes = saved, nil }()
	var out []Result
	for _, s := range scenarios {
		for _, c := range levels {
			r.Env.Concurrency = c
			if r.Progress != nil {
				r.Progress(s, c)
			}
			res, err := r.runOne(ctx, s, rounds)
			if err != nil {
				return out, fmt.Errorf("scenario %s at concurrency %d: %w", s.Name, c, err)
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// side is one measured side of a prepared scenario.
type side struct {
	name string // as Before is told: raw, floor, peer or amends
	op   Op
	m    *Measurement
}

func (r *Runner) runOne(ctx context.Context, s Scenario, rounds int) (Result, error) {
	pair, err := s.Prepare(ctx, r.Env)
	if err != nil {
		return Result{}, fmt.Errorf("prepare: %w", err)
	}
	if pair.Close != nil {
		defer pair.Close()
	}
	workers := max(r.Env.Concurrency, 1)
	res := Result{Scenario: s.Name, Title: s.Title, Baseline: s.Baseline, Concurrency: workers, Notes: pair.Notes}
	sides := res.sides(pair)
	slice := r.Duration / time.Duration(rounds*len(sides))
	for range rounds {
		for _, sd := range sides {
			var before Op
			if pair.Before != nil {
				before = func(ctx context.Context, w, i int) error { return pair.Before(ctx, sd.name, w, i) }
			}
			if err := sd.m.run(ctx, sd.op, before, workers, slice); err != nil {
				return Result{}, fmt.Errorf("%s side: %w", sd.m.Side, err)
			}
		}
	}
	for _, sd := range sides {
		sd.m.finish(pair.PerOp, workers, pair.Before != nil)
	}
	if pair.Finish != nil {
		pair.Finish(&res.Amends)
	}
	res.Ratio, res.FloorRatio, res.PeerRatio = res.over(res.Raw), res.over(res.Floor), res.over(res.Peer)
	return res, nil
}

// sides sets up res's measurements of pair's sides, in the order they run.
func (res *Result) sides(pair *Pair) []side {
	res.Amends.Side = orDefault(pair.AmendsName, "amends")
	var sides []side
	add := func(name, label string, op Op) *Measurement {
		if op == nil {
			return nil
		}
		m := &Measurement{Side: label}
		sides = append(sides, side{name, op, m})
		return m
	}
	res.Raw = add("raw", orDefault(pair.RawName, "raw"), pair.Raw)
	res.Floor = add("floor", orDefault(pair.FloorName, "raw, floor"), pair.Floor)
	res.Peer = add("peer", "peer", pair.Peer)
	return append(sides, side{"amends", pair.Amends, &res.Amends})
}

// over is amends' throughput over m's; 0 without m.
func (res *Result) over(m *Measurement) float64 {
	if m == nil || m.PerSec <= 0 {
		return 0
	}
	return res.Amends.PerSec / m.PerSec
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
