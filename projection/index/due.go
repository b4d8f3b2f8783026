package index

import (
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// Due is a record the scheduler should prepare.
type Due struct {
	// ID is the record id.
	ID string
	// Version is the record's version in the index.
	Version uint64
	// Retries and NextRetryAt (epoch ms) are the retry state that made it
	// due: together they name the due time the scheduler prepares for.
	Retries     int32
	NextRetryAt int64
	// Function, ErrorCode and Fingerprint are the record's function and
	// last failure, for the scheduler's holds (package rules).
	Function    aggregate.FunctionInfo
	ErrorCode   string
	Fingerprint string
}

// Due returns up to limit records for which aggregate.State.Schedulable(now)
// holds, oldest nextRetryAt first: the records PrepareCompensation accepts
// at now that the scheduler retries automatically.
//
// The index keeps the records that can ever be due (Schedulable at the end
// of time) in nextRetryAt order and checks each with Schedulable(now); as
// Schedulable requires now >= nextRetryAt, it stops at the first later
// one. The cost is O(log n + limit + the prepared records that are not yet
// timed out but whose nextRetryAt has passed), whatever the number of
// records. Safe for concurrent use.
func (ix *Index) Due(now time.Time, limit int) []Due {
	if limit <= 0 {
		return nil
	}
	ms := now.UnixMilli()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []Due
	visit := func(p pos) bool {
		e := ix.slots.at(p.slot)
		s := e.predicateState()
		if s.Schedulable(now) {
			out = append(out, Due{ID: unpackID(e.id), Version: e.version, Retries: e.retries, NextRetryAt: e.nextRetryAt,
				Function: aggregate.FunctionInfo{FunctionKind: enumValue(aggregate.FunctionKinds, e.kind), ContextName: ix.names.name(e.fnContext),
					ProcessorName: ix.names.name(e.fnProcessor), Name: ix.names.name(e.fnName)},
				ErrorCode: ix.names.name(e.errorCode), Fingerprint: ix.names.name(e.fingerprint)})
		}
		return len(out) < limit
	}
	if ms == 1<<63-1 {
		ix.due.Each(visit)
	} else {
		ix.due.Below(pos{key: ms + 1}, visit)
	}
	return out
}
