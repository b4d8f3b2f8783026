package projection

import (
	"slices"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// entry is a record as the index keeps it: the fields filters, sorts,
// views and the due list need, names interned, times in epoch ms. About
// 125 bytes plus the bytes of its ids (16 for a UUID, see ids.go).
type entry struct {
	id, eventID            string // packed (ids.go)
	aggregateID            string
	version                uint64
	executeAt              int64
	timeoutAt, nextRetryAt int64
	retries, maxRetries    int32
	aggContext, aggType    uint32
	fnContext, fnProcessor uint32
	fnName, errorCode      uint32
	fingerprint            uint32
	kind, status, recover  uint8
	cell                   uint8  // its cell at the index's now (cells.go)
	gen                    uint32 // the watch that delivered it last (see Index.gen)
}

// enumIndex returns v's 1-based position in values, 0 if absent.
func enumIndex[T comparable](values []T, v T) uint8 {
	return uint8(slices.Index(values, v) + 1)
}

func enumValue[T any](values []T, i uint8) (v T) {
	if i == 0 || int(i) > len(values) {
		return v
	}
	return values[i-1]
}

// newEntry compacts a view.
func newEntry(v *View, in *interner) entry {
	s := &v.State
	return entry{
		id:          packID(s.ID),
		eventID:     packID(s.EventID.ID),
		aggregateID: s.EventID.AggregateID.AggregateID,
		version:     v.Version,
		executeAt:   s.ExecuteAt,
		timeoutAt:   s.RetryState.TimeoutAt,
		nextRetryAt: s.RetryState.NextRetryAt,
		retries:     s.RetryState.Retries,
		maxRetries:  s.RetrySpec.MaxRetries,
		aggContext:  in.intern(s.EventID.AggregateID.ContextName),
		aggType:     in.intern(s.EventID.AggregateID.AggregateName),
		fnContext:   in.intern(s.Function.ContextName),
		fnProcessor: in.intern(s.Function.ProcessorName),
		fnName:      in.intern(s.Function.Name),
		errorCode:   in.intern(s.Error.ErrorCode),
		fingerprint: in.intern(s.Error.Fingerprint),
		kind:        enumIndex(aggregate.FunctionKinds, s.Function.FunctionKind),
		status:      enumIndex(aggregate.Statuses, s.Status),
		recover:     enumIndex(aggregate.Recoverabilities, s.Recoverable),
	}
}

// entryOf is newEntry for a view read by decodeViewFields.
func entryOf(f *viewFields, in *interner) entry {
	return entry{
		id:          packIDBytes(f.id),
		eventID:     packIDBytes(f.eventID),
		aggregateID: string(f.aggregateID),
		version:     f.version,
		executeAt:   f.executeAt,
		timeoutAt:   f.timeoutAt,
		nextRetryAt: f.nextRetryAt,
		retries:     f.retries,
		maxRetries:  f.maxRetries,
		aggContext:  in.internBytes(f.aggContext),
		aggType:     in.internBytes(f.aggName),
		fnContext:   in.internBytes(f.fnContext),
		fnProcessor: in.internBytes(f.fnProcessor),
		fnName:      in.internBytes(f.fnName),
		errorCode:   in.internBytes(f.errorCode),
		fingerprint: in.internBytes(f.fingerprint),
		kind:        enumIndexBytes(aggregate.FunctionKinds, f.fnKind),
		status:      enumIndexBytes(aggregate.Statuses, f.status),
		recover:     enumIndexBytes(aggregate.Recoverabilities, f.recoverable),
	}
}

// enumIndexBytes is enumIndex for the bytes of a value.
func enumIndexBytes[T ~string](values []T, b []byte) uint8 {
	for i, v := range values {
		if string(v) == string(b) {
			return uint8(i + 1)
		}
	}
	return 0
}

// predicateState is the record as far as the aggregate's predicates
// (IsBelowRetryThreshold, IsRetryable, Timeout, CanForceRetry, CanRetry,
// CanNextRetry, Schedulable, View.Contains) read it. Every selection the
// index makes calls those predicates on this state, so the index and the
// aggregate cannot disagree; a test checks that the predicates give the
// same answers on it as on the full state.
func (e *entry) predicateState() aggregate.State {
	return aggregate.State{
		ID:          e.id,
		ExecuteAt:   e.executeAt,
		RetrySpec:   aggregate.RetrySpec{MaxRetries: e.maxRetries},
		RetryState:  aggregate.RetryState{Retries: e.retries, TimeoutAt: e.timeoutAt, NextRetryAt: e.nextRetryAt},
		Status:      enumValue(aggregate.Statuses, e.status),
		Recoverable: enumValue(aggregate.Recoverabilities, e.recover),
	}
}

// endOfTime is the latest instant in epoch ms.
var endOfTime = time.UnixMilli(1<<63 - 1)

// dueCandidate reports whether the record can ever be due without another
// command: Schedulable at the end of time. Schedulable only becomes true as
// time passes (CanForceRetry and now >= nextRetryAt), so every record
// Schedulable at some now is a candidate.
func (e *entry) dueCandidate() bool {
	s := e.predicateState()
	return s.Schedulable(endOfTime)
}

// Item is a record as List returns it: what the index holds (the API's
// type). Get returns the full record.
type Item = api.Item

// item expands e.
func (e *entry) item(in *interner) Item {
	return Item{
		ID:      unpackID(e.id),
		Version: e.version,
		EventID: unpackID(e.eventID),
		Aggregate: aggregate.WireAggregateID{ContextName: in.name(e.aggContext), AggregateName: in.name(e.aggType),
			AggregateID: e.aggregateID, TenantID: aggregate.DefaultTenantID},
		Function: aggregate.FunctionInfo{FunctionKind: enumValue(aggregate.FunctionKinds, e.kind),
			ContextName: in.name(e.fnContext), ProcessorName: in.name(e.fnProcessor), Name: in.name(e.fnName)},
		Status:      enumValue(aggregate.Statuses, e.status),
		Recoverable: enumValue(aggregate.Recoverabilities, e.recover),
		ErrorCode:   in.name(e.errorCode),
		Fingerprint: in.name(e.fingerprint),
		ExecuteAt:   e.executeAt,
		Retries:     e.retries,
		MaxRetries:  e.maxRetries,
		TimeoutAt:   e.timeoutAt,
		NextRetryAt: e.nextRetryAt,
	}
}
