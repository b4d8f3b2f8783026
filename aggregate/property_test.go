package aggregate_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	. "github.com/amends-dev/amends/aggregate"
)

func genSpec() *rapid.Generator[RetrySpec] {
	return rapid.Custom(func(t *rapid.T) RetrySpec {
		return RetrySpec{
			MaxRetries:       rapid.Int32Range(-1, 12).Draw(t, "maxRetries"),
			MinBackoff:       rapid.SampledFrom([]int32{-1, 0, 1, 60, 180, 1 << 30}).Draw(t, "minBackoff"),
			ExecutionTimeout: rapid.SampledFrom([]int32{-1, 0, 1, 30, 120}).Draw(t, "executionTimeout"),
		}
	})
}

func genRecoverability() *rapid.Generator[Recoverability] {
	return rapid.SampledFrom([]Recoverability{"", Recoverable, Unrecoverable, RecoverabilityUnknown})
}

func genCommand(now int64, prepared []uint64) *rapid.Generator[Command] {
	// A result's prepared version: none, or that of any attempt so far
	// (the current one or a stale one).
	genPrepared := rapid.Custom(func(t *rapid.T) uint64 {
		if rapid.Bool().Draw(t, "withoutPrepared") || len(prepared) == 0 {
			return 0
		}
		return rapid.SampledFrom(prepared).Draw(t, "prepared")
	})
	return rapid.Custom(func(t *rapid.T) Command {
		switch rapid.IntRange(0, 7).Draw(t, "command") {
		case 0:
			c := create
			c.ExecuteAt = now
			if rapid.Bool().Draw(t, "withSpec") {
				spec := genSpec().Draw(t, "spec")
				c.RetrySpec = &spec
			}
			c.Recoverable = genRecoverability().Draw(t, "recoverable")
			return c
		case 1:
			return PrepareCompensation{}
		case 2:
			return ForcePrepareCompensation{}
		case 3:
			return ApplyExecutionSuccess{ExecuteAt: now, Attempt: rapid.Int32Range(0, 4).Draw(t, "attempt"), PreparedVersion: genPrepared.Draw(t, "preparedVersion")}
		case 4:
			return ApplyExecutionFailed{Error: boom, ExecuteAt: now, Recoverable: genRecoverability().Draw(t, "recoverable"), Attempt: rapid.Int32Range(0, 4).Draw(t, "attempt"),
				PreparedVersion: genPrepared.Draw(t, "preparedVersion")}
		case 5:
			return ApplyRetrySpec(genSpec().Draw(t, "spec"))
		case 6:
			f := fn
			f.Name = rapid.SampledFrom([]string{"onEvent", "onOther", ""}).Draw(t, "name")
			f.FunctionKind = rapid.SampledFrom([]FunctionKind{KindEvent, KindStateEvent}).Draw(t, "kind")
			return ChangeFunction(f)
		default:
			return MarkRecoverable{Recoverable: genRecoverability().Draw(t, "recoverable")}
		}
	})
}

var kinds = []error{ErrIllegalState, ErrIllegalArgument, ErrArithmetic, ErrNotFound, ErrAlreadyRecorded, ErrStaleAttempt}

// TestStateMachineProperties runs random command sequences at random times
// and checks the invariants after every step.
func TestStateMachineProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := State{ID: "rec-p"}
		now := t0
		var version uint64    // the record's version, as a Service counts it
		var prepared []uint64 // the versions that prepared an attempt
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			now += rapid.SampledFrom([]int64{0, 1, 999, 30_000, 120_000, 120_001, 400_000, 3_600_000}).Draw(t, "advance")
			c := genCommand(now, prepared).Draw(t, "cmd")
			before := s
			events, err := Decide(s, c, at(now))
			again, err2 := Decide(s, c, at(now))
			if (err == nil) != (err2 == nil) || len(events) != len(again) {
				t.Fatalf("Decide is not deterministic for %T", c)
			}
			if err != nil {
				var ae *Error
				if !errors.As(err, &ae) || !matchesOneKind(err) {
					t.Fatalf("%T rejected with %v, not an *Error of a known kind", c, err)
				}
				checkDetails(t, s, ae, now)
				continue
			}
			checkFenced(t, s, c)
			version++
			s = EvolveAt(s, version, events...)
			if s.Status == StatusPrepared && s.PreparedVersion == version {
				prepared = append(prepared, version)
			}

			_, isCreate := c.(CreateExecutionFailed)
			if before.Status == StatusSucceeded && !isCreate && s.Status != StatusSucceeded {
				t.Fatalf("%T moved a SUCCEEDED record to %s", c, s.Status)
			}
			if !isCreate && s.RetryState.Retries < before.RetryState.Retries {
				t.Fatalf("%T decreased retries from %d to %d", c, before.RetryState.Retries, s.RetryState.Retries)
			}
			checkPredicates(t, s, now)
			checkRoundTrip(t, s)
		}
	})
}

// checkDetails: a refusal on an existing record carries its state, and
// lists as accepted exactly the replay commands Decide accepts.
func checkDetails(t *rapid.T, s State, e *Error, now int64) {
	d := e.Details()
	if !s.Exists() {
		if d != nil {
			t.Fatalf("a refusal on a missing record has details %v", d)
		}
		return
	}
	if d == nil || d["status"] != string(s.Status) || d["retries"] != s.RetryState.Retries {
		t.Fatalf("a refusal on a %s record has details %v", s.Status, d)
	}
	accepted := d["accepted"].([]string)
	for _, c := range []Command{PrepareCompensation{}, ForcePrepareCompensation{}} {
		_, err := Decide(s, c, at(now))
		if (err == nil) != slices.Contains(accepted, c.CommandName()) {
			t.Fatalf("accepted %v disagrees with Decide on %s: %v", accepted, c.CommandName(), err)
		}
	}
}

// checkFenced: an accepted result that names a prepared version names the
// current attempt's.
func checkFenced(t *rapid.T, s State, c Command) {
	var pv uint64
	switch c := c.(type) {
	case ApplyExecutionSuccess:
		pv = c.PreparedVersion
	case ApplyExecutionFailed:
		pv = c.PreparedVersion
	}
	if pv != 0 && pv != s.PreparedVersion {
		t.Fatalf("%T prepared at version %d was accepted by the attempt prepared at version %d", c, pv, s.PreparedVersion)
	}
}

func matchesOneKind(err error) bool {
	n := 0
	for _, k := range kinds {
		if errors.Is(err, k) {
			n++
		}
	}
	return n == 1
}

// checkPredicates is one function (gocyclo 38) on purpose: it is the list
// of the state's predicates, each compared with the reference's formula
// written out from the raw fields, read top to bottom; split, each part
// would only repeat the same state and clock.
func checkPredicates(t *rapid.T, s State, now int64) {
	n := at(now)
	if s.IsRetryable() != (s.Status != StatusSucceeded && s.IsBelowRetryThreshold()) {
		t.Fatalf("IsRetryable disagrees with status %s and retries %d/%d", s.Status, s.RetryState.Retries, s.RetrySpec.MaxRetries)
	}
	// The reference formulas, written out from the raw fields.
	ms := now
	below := s.RetryState.Retries < s.RetrySpec.MaxRetries
	timeout := ms > s.RetryState.TimeoutAt
	force := s.Status == StatusFailed || s.Status == StatusPrepared && timeout
	if s.IsBelowRetryThreshold() != below || s.Timeout(n) != timeout || s.CanForceRetry(n) != force ||
		s.CanRetry(n) != (force && below) || s.CanNextRetry(n) != (force && below && ms >= s.RetryState.NextRetryAt) ||
		s.Schedulable(n) != (s.Recoverable != Unrecoverable && force && below && ms >= s.RetryState.NextRetryAt) {
		t.Fatalf("a predicate disagrees with the reference formula for %+v at %d", s.RetryState, now)
	}
	switch s.Status {
	case StatusSucceeded:
		if s.CanForceRetry(n) || s.CanRetry(n) || s.CanNextRetry(n) {
			t.Fatalf("a SUCCEEDED record can retry")
		}
	case StatusFailed:
		if !s.CanForceRetry(n) {
			t.Fatalf("a FAILED record cannot force retry")
		}
	case StatusPrepared:
		if s.CanForceRetry(n) != s.Timeout(n) {
			t.Fatalf("a PREPARED record's force retry disagrees with its timeout")
		}
	}
	if s.CanNextRetry(n) && !s.CanRetry(n) || s.CanRetry(n) && !s.CanForceRetry(n) {
		t.Fatalf("CanNextRetry => CanRetry => CanForceRetry broken")
	}
	// What the scheduler selects, Prepare accepts (or fails only on overflow).
	if s.Schedulable(n) {
		if _, err := Decide(s, PrepareCompensation{}, n); err != nil && !errors.Is(err, ErrArithmetic) {
			t.Fatalf("a schedulable record rejects PrepareCompensation: %v", err)
		}
	}
	if _, err := Decide(s, PrepareCompensation{}, n); (err == nil) != s.CanRetry(n) && !errors.Is(err, ErrArithmetic) {
		t.Fatalf("PrepareCompensation acceptance (%v) disagrees with CanRetry (%v)", err, s.CanRetry(n))
	}
	if ViewNextRetry.Contains(&s, n) && !ViewToRetry.Contains(&s, n) {
		t.Fatalf("next-retry is not inside to-retry")
	}
	if ViewExecuting.Contains(&s, n) && ViewToRetry.Contains(&s, n) {
		t.Fatalf("a record is both executing and to-retry")
	}
}

func checkRoundTrip(t *rapid.T, s State) {
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("marshal state: %v", err)
	}
	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("unmarshal state: %v", err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(data) {
		t.Fatalf("state JSON does not round trip:\n%s\n%s", data, again)
	}
}
