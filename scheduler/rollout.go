package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/rollout"
)

// The deploy release (parkrelease.go) and the recovery drain (drain.go)
// are rollouts (package rollout: one progress type, the Stepped and the
// Adaptive policy); each chooses its records. This file is how the
// scheduler carries out a rollout's batches: prepare them, and tell what
// became of their records.

// prepareAll sends each of items the command cmdOf gives it,
// s.opts.concurrency at once, with the meta metaOf gives it (a command id
// that makes a resend append once), and returns those it prepared with
// their attempt, in items' order. A
// record that moved on (a rejection) is left out; the first other error is
// returned with the records prepared before or beside it.
func (s *Scheduler) prepareAll(ctx context.Context, items []api.Item, cmdOf func(api.Item) aggregate.Command, metaOf func(api.Item) aggregate.Meta) ([]rollout.Record, error) {
	out := make([]rollout.Record, len(items))
	sem := make(chan struct{}, s.opts.concurrency)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := s.exec.Execute(ctx, it.ID, cmdOf(it), metaOf(it))
			switch {
			case err == nil:
				out[i] = rollout.Record{ID: it.ID, Attempt: res.State.Attempt(), Refused: refused(it)}
			case errors.As(err, new(*aggregate.Error)):
				// the record moved on
			default:
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	batch := out[:0]
	for _, r := range out {
		if r.ID != "" {
			batch = append(batch, r)
		}
	}
	return batch, first
}

// settleBatch tells what became of batch's records, each tick or pass
// until it settles: pending, at the first record with no outcome yet
// (the others are not read), or else the ids that succeeded and those
// that failed.
func settleBatch(records RecordLister, batch []rollout.Record, now time.Time) (pending bool, ok, failed []string) {
	return outcomes(records, batch, now, true)
}

// outcomes sorts batch's records into those that succeeded and those
// that failed, leaving out those with no outcome yet (pending reports
// one); stopAtPending returns at the first of them.
func outcomes(records RecordLister, batch []rollout.Record, now time.Time, stopAtPending bool) (pending bool, ok, failed []string) {
	for _, r := range batch {
		switch outcome(records, r, now) {
		case outcomePending:
			if stopAtPending {
				return true, nil, nil
			}
			pending = true
		case outcomeSucceeded:
			ok = append(ok, r.ID)
		default:
			failed = append(failed, r.ID)
		}
	}
	return pending, ok, failed
}

// forcePrepare prepares every record beyond its retry limit (a deploy
// release of parked records).
func forcePrepare(api.Item) aggregate.Command { return aggregate.ForcePrepareCompensation{} }

// prepareOrForce prepares a record with a retry left and forces the others
// (refused records whose retries ran out while their circuit refused
// them: a refusal is not an attempt).
func prepareOrForce(it api.Item) aggregate.Command {
	if !retriesLeft(it) {
		return aggregate.ForcePrepareCompensation{}
	}
	return aggregate.PrepareCompensation{}
}

// retriesLeft reports whether it has an automatic retry left, as
// aggregate.State.IsBelowRetryThreshold does for the record itself.
func retriesLeft(it api.Item) bool { return it.Retries < it.MaxRetries }

// refused reports whether it's last failure was a refusal by its
// function's circuit: the function was never called for its event.
func refused(it api.Item) bool { return it.ErrorCode == circuit.ErrorCode }

type releaseOutcome int

const (
	outcomePending releaseOutcome = iota
	outcomeSucceeded
	outcomeFailed
)

// outcome tells what became of released record r: pending while the
// index has not seen its prepare or its replay runs, succeeded, or failed
// (failed again, timed out, moved on without succeeding, or gone).
func outcome(records RecordLister, r rollout.Record, now time.Time) releaseOutcome {
	page, err := records.List(api.Query{Filter: api.Filter{ID: r.ID}, Limit: 1})
	if err != nil {
		return outcomePending
	}
	if len(page.Items) == 0 {
		return outcomeFailed
	}
	it := page.Items[0]
	switch {
	case it.Retries < r.Attempt:
		return outcomePending // the index has not seen the prepare yet
	case it.Status == aggregate.StatusSucceeded:
		return outcomeSucceeded
	case it.Retries > r.Attempt:
		return outcomeFailed
	case it.Status == aggregate.StatusPrepared && now.UnixMilli() <= it.TimeoutAt:
		return outcomePending
	}
	return outcomeFailed
}
