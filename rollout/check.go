package rollout

import (
	"math"
	"strconv"
	"time"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// Bounds are what an owner allows of a stored Progress beside the rules
// every rollout keeps.
type Bounds struct {
	// Phases are the owner's phases beside the rollout's.
	Phases []string
	// MaxStep bounds Step.
	MaxStep int
	// MaxRate, if above 0, makes the rollout paced: while running, its
	// size is from 1 to MaxBatch and its rate above 0 and at most
	// MaxRate. Unpaced, the rate is 0.
	MaxRate float64
	// MaxWait bounds how far after now NextAt may be (a paced batch, a
	// retry's wait).
	MaxWait time.Duration
}

// Skew is how far ahead of now a stored time may be: clocks of
// different machines differ by a little.
const Skew = 5 * time.Minute

// Limits of a stored Progress.
const (
	MaxJudged    = 1 << 30
	MaxNoteBytes = 4096
)

// Check validates p as stored, at now, within b: the phase is the
// rollout's or one of b's; the step, the size, the rate and the counts
// are in range (succeeded plus failed at most released); the batch, only
// while running, holds at most MaxBatch distinct records, each a record
// id with an attempt from 1; the times are not after now by more than
// Skew, NextAt by more than b.MaxWait; the note and the halt (only when
// halted) are short UTF-8 text. The error is a *kvstore.FieldError
// naming the field.
func (p Progress) Check(now time.Time, b Bounds) error {
	phases := append([]string{PhaseCanary, PhaseSteps, PhaseDone, PhaseHalted}, b.Phases...)
	if err := kvstore.OneOf("phase", p.Phase, phases...); err != nil {
		return err
	}
	if err := kvstore.Range("step", p.Step, 0, b.MaxStep); err != nil {
		return err
	}
	if err := kvstore.Range("steps", p.Judged, 0, MaxJudged); err != nil {
		return err
	}
	if err := p.checkPace(b); err != nil {
		return err
	}
	for _, t := range []struct {
		field string
		ms    int64
	}{{"startedAt", p.StartedAt}, {"batchAt", p.BatchAt}, {"doneAt", p.DoneAt}, {"updatedAt", p.UpdatedAt}} {
		if err := kvstore.Within(t.field, t.ms, now, Skew); err != nil {
			return err
		}
	}
	if err := kvstore.Within("nextAt", p.NextAt, now, b.MaxWait+Skew); err != nil {
		return err
	}
	if err := p.checkBatch(); err != nil {
		return err
	}
	switch {
	case p.Released < 0 || p.Succeeded < 0 || p.Failed < 0:
		return kvstore.Invalid("released", "the counts must not be negative, got released %d, succeeded %d, failed %d", p.Released, p.Succeeded, p.Failed)
	case p.Succeeded > p.Released || p.Failed > p.Released-p.Succeeded:
		return kvstore.Invalid("released", "succeeded %d plus failed %d is more than released %d", p.Succeeded, p.Failed, p.Released)
	case p.Halt != "" && p.Phase != PhaseHalted:
		return kvstore.Invalid("halt", "only a halted rollout has a halt reason; this one is in phase %s", p.Phase)
	}
	if err := kvstore.Text("note", p.Note, MaxNoteBytes, false); err != nil {
		return err
	}
	return kvstore.Text("halt", p.Halt, MaxNoteBytes, false)
}

func (p Progress) checkPace(b Bounds) error {
	if err := kvstore.Range("size", p.Size, 0, MaxBatch); err != nil {
		return err
	}
	switch {
	case b.MaxRate <= 0 && p.Rate != 0:
		return kvstore.Invalid("rate", "this rollout is not paced; its rate must be 0, got %v", p.Rate)
	case b.MaxRate <= 0:
		return nil
	case math.IsNaN(p.Rate) || !bounds.Within(p.Rate, 0, b.MaxRate):
		return kvstore.Invalid("rate", "must be from 0 to %v records/s, got %v", b.MaxRate, p.Rate)
	case p.Running() && p.Size < 1:
		return kvstore.Invalid("size", "must be from 1 to %d while running, got %d", MaxBatch, p.Size)
	case p.Running() && p.Rate == 0:
		return kvstore.Invalid("rate", "must be above 0 while running")
	}
	return nil
}

func (p Progress) checkBatch() error {
	switch {
	case len(p.Batch) > 0 && !p.Running():
		return kvstore.Invalid("batch", "a rollout in phase %s has no batch under way, got %d records", p.Phase, len(p.Batch))
	case len(p.Batch) > MaxBatch:
		return kvstore.Invalid("batch", "has %d records, over the limit of %d", len(p.Batch), MaxBatch)
	}
	seen := make(map[string]bool, len(p.Batch))
	for i, r := range p.Batch {
		field := "batch[" + strconv.Itoa(i) + "]"
		if err := CheckRecord(field, r); err != nil {
			return err
		}
		if seen[r.ID] {
			return kvstore.Invalid(field+".id", "record %s is in the batch twice", r.ID)
		}
		seen[r.ID] = true
	}
	return nil
}

// CheckRecord validates a stored Record: a record id and an attempt from
// 1. The error is a *kvstore.FieldError naming field.
func CheckRecord(field string, r Record) error {
	if err := eventstore.ValidateID(field+".id", r.ID); err != nil {
		return kvstore.Invalid(field+".id", "%v", err)
	}
	if r.Attempt < 1 {
		return kvstore.Invalid(field+".attempt", "must be at least 1, got %d", r.Attempt)
	}
	return nil
}
