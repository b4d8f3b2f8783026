package index

import (
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

// enumIndex returns the 1-based position of the value named s in values,
// 0 if absent.
func enumIndex[T ~string, S text](values []T, s S) uint8 {
	for i, v := range values {
		if string(v) == string(s) {
			return uint8(i + 1)
		}
	}
	return 0
}

func enumValue[T any](values []T, i uint8) (v T) {
	if i == 0 || int(i) > len(values) {
		return v
	}
	return values[i-1]
}

// text is what a record's strings are: strings, or the bytes of a
// decoded document.
type text interface{ ~string | ~[]byte }

// Fields is what the index reads of a record: a View's fields, as
// strings (Batch.Put) or as the bytes a decoder read them into
// (Batch.PutFields). The enums (FunctionKind, Status, Recoverable) are
// their canonical names; an unknown one counts as absent.
type Fields[S text] struct {
	ID, EventID, AggregateID        S
	AggregateContext, AggregateType S
	FunctionKind                    S
	FunctionContext, Processor      S
	Function                        S
	ErrorCode, ErrorMsg             S
	Fingerprint                     S
	Status, Recoverable             S
	Version                         uint64
	ExecuteAt                       int64
	TimeoutAt, NextRetryAt          int64
	Retries, MaxRetries             int32
}

// fieldsOf returns the fields of v, sharing its strings.
func fieldsOf(v *api.View) Fields[string] {
	s := &v.State
	return Fields[string]{
		ID: s.ID, EventID: s.EventID.ID, AggregateID: s.EventID.AggregateID.AggregateID,
		AggregateContext: s.EventID.AggregateID.ContextName, AggregateType: s.EventID.AggregateID.AggregateName,
		FunctionKind: string(s.Function.FunctionKind), FunctionContext: s.Function.ContextName,
		Processor: s.Function.ProcessorName, Function: s.Function.Name,
		ErrorCode: s.Error.ErrorCode, ErrorMsg: s.Error.ErrorMsg, Fingerprint: s.Error.Fingerprint,
		Status: string(s.Status), Recoverable: string(s.Recoverable),
		Version: v.Version, ExecuteAt: s.ExecuteAt, TimeoutAt: s.RetryState.TimeoutAt, NextRetryAt: s.RetryState.NextRetryAt,
		Retries: s.RetryState.Retries, MaxRetries: s.RetrySpec.MaxRetries,
	}
}

// newEntry compacts a record, copying what it keeps of f's strings.
func newEntry[S text](f *Fields[S], in *interner) entry {
	return entry{
		id:          packID(f.ID),
		eventID:     packID(f.EventID),
		aggregateID: string(f.AggregateID),
		version:     f.Version,
		executeAt:   f.ExecuteAt,
		timeoutAt:   f.TimeoutAt,
		nextRetryAt: f.NextRetryAt,
		retries:     f.Retries,
		maxRetries:  f.MaxRetries,
		aggContext:  intern(in, f.AggregateContext),
		aggType:     intern(in, f.AggregateType),
		fnContext:   intern(in, f.FunctionContext),
		fnProcessor: intern(in, f.Processor),
		fnName:      intern(in, f.Function),
		errorCode:   intern(in, f.ErrorCode),
		fingerprint: intern(in, f.Fingerprint),
		kind:        enumIndex(aggregate.FunctionKinds, f.FunctionKind),
		status:      enumIndex(aggregate.Statuses, f.Status),
		recover:     enumIndex(aggregate.Recoverabilities, f.Recoverable),
	}
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

// item expands e.
func (e *entry) item(in *interner) api.Item {
	return api.Item{
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
