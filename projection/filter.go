package projection

import (
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// Filter selects records (the API's type). Every field that is set must
// match (AND); the zero Filter selects every record.
type Filter = api.Filter

// matcher is a Filter compiled against an index's names.
type matcher struct {
	f     Filter
	names [7]uint32 // aggContext, aggType, fnContext, fnProcessor, fnName, errorCode, fingerprint; 0 = any
	kind  uint8
	stat  uint8
	rec   uint8
	from  int64
	to    int64
	// nrFrom and nrTo bound nextRetryAt.
	nrFrom, nrTo int64
	// execBound and nextBound: the filter bounds executeAt, nextRetryAt.
	execBound, nextBound bool
	now                  time.Time
	none                 bool // a name no entry holds: nothing matches
	// id and eventID are the filter's, packed as entries hold them.
	id, eventID string
}

// compile resolves f's names. The caller holds the read lock.
func (ix *Index) compile(f Filter) matcher {
	m := matcher{f: f, from: -1 << 63, to: 1<<63 - 1, nrFrom: -1 << 63, nrTo: 1<<63 - 1, now: f.Now,
		id: packID(f.ID), eventID: packID(f.EventID)}
	for i, s := range []string{f.AggregateContext, f.AggregateType, f.FunctionContext, f.Processor, f.Function, f.ErrorCode, f.Fingerprint} {
		if s == "" {
			continue
		}
		id, ok := ix.names.lookup(s)
		if !ok {
			m.none = true
		}
		m.names[i] = id
	}
	if f.FunctionKind != "" {
		m.kind = enumIndex(aggregate.FunctionKinds, f.FunctionKind)
		m.none = m.none || m.kind == 0
	}
	if f.Status != "" {
		m.stat = enumIndex(aggregate.Statuses, f.Status)
		m.none = m.none || m.stat == 0
	}
	if f.Recoverable != "" {
		m.rec = enumIndex(aggregate.Recoverabilities, f.Recoverable)
		m.none = m.none || m.rec == 0
	}
	if !f.ExecuteAtFrom.IsZero() {
		m.from = f.ExecuteAtFrom.UnixMilli()
	}
	if !f.ExecuteAtTo.IsZero() {
		m.to = f.ExecuteAtTo.UnixMilli()
	}
	if !f.NextRetryAtFrom.IsZero() {
		m.nrFrom = f.NextRetryAtFrom.UnixMilli()
	}
	if !f.NextRetryAtTo.IsZero() {
		m.nrTo = f.NextRetryAtTo.UnixMilli()
	}
	m.execBound = !f.ExecuteAtFrom.IsZero() || !f.ExecuteAtTo.IsZero()
	m.nextBound = !f.NextRetryAtFrom.IsZero() || !f.NextRetryAtTo.IsZero()
	if m.now.IsZero() {
		m.now = ix.clock.Now()
	}
	return m
}

// match reports whether e passes the filter.
func (m *matcher) match(e *entry) bool {
	if m.none {
		return false
	}
	names := [7]uint32{e.aggContext, e.aggType, e.fnContext, e.fnProcessor, e.fnName, e.errorCode, e.fingerprint}
	for i, want := range m.names {
		if want != 0 && names[i] != want {
			return false
		}
	}
	switch {
	case m.kind != 0 && e.kind != m.kind,
		m.stat != 0 && e.status != m.stat,
		m.rec != 0 && e.recover != m.rec,
		m.execBound && !inBounds(e.executeAt, m.from, m.to, !m.f.ExecuteAtTo.IsZero()),
		m.nextBound && !inBounds(e.nextRetryAt, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero()),
		e.retries < m.f.MinRetries,
		m.f.ID != "" && e.id != m.id,
		m.f.EventID != "" && e.eventID != m.eventID,
		m.f.AggregateID != "" && e.aggregateID != m.f.AggregateID:
		return false
	}
	if m.f.View != "" {
		s := e.predicateState()
		return m.f.View.Contains(&s, m.now)
	}
	return true
}

// inBounds reports from <= x and, if hasTo, x < to: a bound that is not
// set does not exclude the largest instant.
func inBounds(x, from, to int64, hasTo bool) bool {
	return x >= from && (!hasTo || x < to)
}
