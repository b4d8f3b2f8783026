package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

// ErrNotReached: the instance that holds a record's partition did not
// hold the record at the version asked for within the wait.
var ErrNotReached = errors.New("the record did not reach the version in its holder's index")

// WaitFor returns once the instance whose partition holds record id of
// processor holds it at version or later, so that a caller that has just
// executed a command reads its write from any instance's List, Count or
// Summary. The wait ends with ctx (at most MaxWait; the Querier's Timeout
// when ctx has no deadline). Errors: an invalid id (before anything is
// sent), a plan that cannot be read, an *Incomplete naming the partition
// when the plan does not place processor or its holder does not answer,
// and ErrNotReached. Safe for concurrent use.
func (q *Querier) WaitFor(ctx context.Context, processor, id string, version uint64) error {
	if err := projection.CheckID(id); err != nil {
		return err
	}
	if version == 0 {
		return nil // every record is at version 0 or later
	}
	plan, err := q.cfg.Plan(ctx)
	if err != nil {
		return fmt.Errorf("read the partitions' plan: %w", err)
	}
	pid := plan.Of(processor, id)
	owner, ok := plan.Owners[pid]
	if !ok {
		return &Incomplete{Coverage{Missing: []string{processor}}}
	}
	wait := q.cfg.Timeout
	if d, ok := ctx.Deadline(); ok {
		// A quarter of the time left is for the reply to come back.
		wait = time.Until(d) * 3 / 4
	}
	wait = min(max(wait, time.Millisecond), MaxWait)
	data, err := jsonv2.Marshal(request{Op: opWait, ID: id, Version: version, Wait: wait.Milliseconds()})
	if err != nil {
		return fmt.Errorf("encode the request: %w", err)
	}
	subject, err := subjectOf(q.cfg.Prefix, owner)
	if err != nil {
		return err
	}
	// The reply comes once the wait ends: the request waits for it and
	// the usual timeout after it (ctx permitting).
	r, err := q.request(ctx, subject, opWait, data, wait+q.cfg.Timeout)
	switch {
	case err != nil:
		return &Incomplete{Coverage{Missing: []string{pid}, Unanswered: []Unanswered{{owner, err.Error()}}}}
	case r.Error != nil:
		return &Incomplete{Coverage{Missing: []string{pid}, Unanswered: []Unanswered{{owner, r.Error.Kind + ": " + r.Error.Message}}}}
	case !*r.Reached:
		return fmt.Errorf("record %s at version %d, in partition %s of instance %q, within %s: %w", id, version, pid, owner, wait, ErrNotReached)
	}
	return nil
}

// WaitFor returns once the views bucket holds record id at version or
// later (read through Views, polled), and then once the index of the
// instance that holds its partition does (Querier.WaitFor): a caller that
// has just executed a command reads its write from Get and from every
// instance's queries. A record whose processor the plan does not place
// yet has no index to wait for: WaitFor returns once the bucket holds it,
// and the queries name it missing. Errors: ctx's, with the record and
// version, if it ends first; Views' other errors; Querier.WaitFor's.
// Safe for concurrent use.
func (s Strict) WaitFor(ctx context.Context, id string, version uint64) error {
	if s.Views == nil {
		return fmt.Errorf("strict: WaitFor needs Views: %w", ErrInvalidOption)
	}
	if err := projection.CheckID(id); err != nil {
		return err
	}
	var v api.View
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		var err error
		v, err = s.Views(ctx, id)
		if err == nil && v.Version >= version {
			break
		}
		if err != nil && !errors.Is(err, projection.ErrNotFound) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("record %s at version %d in the views bucket: %w", id, version, ctx.Err())
		case <-t.C:
		}
	}
	err := s.Querier.WaitFor(ctx, v.State.Function.ProcessorName, id, version)
	var inc *Incomplete
	if errors.As(err, &inc) && len(inc.Unanswered) == 0 {
		return nil // unplaced: no index holds it yet
	}
	return err
}
