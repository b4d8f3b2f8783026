package index

import (
	"strings"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// matcher is a Filter compiled against an index's names.
type matcher struct {
	f api.Filter
	// group holds the group names the filter asks for (function context,
	// processor, function, error code, fingerprint), side the side names
	// (by sideAggContext, sideAggType, sideKind); 0 = any.
	group groupKey
	side  [numSides]uint32
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
func (ix *Index) compile(f api.Filter) matcher {
	m := matcher{f: f, from: -1 << 63, to: 1<<63 - 1, nrFrom: -1 << 63, nrTo: 1<<63 - 1, now: f.Now,
		id: packID(f.ID), eventID: packID(f.EventID)}
	name := func(s string) uint32 {
		if s == "" {
			return 0
		}
		id, ok := ix.names.lookup(s)
		m.none = m.none || !ok
		return id
	}
	m.group = groupKey{ctx: name(f.FunctionContext), proc: name(f.Processor), fn: name(f.Function), code: name(f.ErrorCode), fp: name(f.Fingerprint)}
	m.side[sideAggContext], m.side[sideAggType] = name(f.AggregateContext), name(f.AggregateType)
	enum := func(set bool, i uint8) uint8 {
		m.none = m.none || set && i == 0
		return i
	}
	m.side[sideKind] = uint32(enum(f.FunctionKind != "", enumIndex(aggregate.FunctionKinds, f.FunctionKind)))
	m.stat = enum(f.Status != "", enumIndex(aggregate.Statuses, f.Status))
	m.rec = enum(f.Recoverable != "", enumIndex(aggregate.Recoverabilities, f.Recoverable))
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

// covers reports whether the names of group g pass those the filter asks
// for (k, 0 = any).
func (k groupKey) covers(g groupKey) bool {
	return (k.ctx == 0 || k.ctx == g.ctx) && (k.proc == 0 || k.proc == g.proc) && (k.fn == 0 || k.fn == g.fn) &&
		(k.code == 0 || k.code == g.code) && (k.fp == 0 || k.fp == g.fp)
}

// sidesMatch reports whether side values vs pass the filter's.
func (m *matcher) sidesMatch(vs [numSides]uint32) bool {
	for d, want := range m.side {
		if want != 0 && vs[d] != want {
			return false
		}
	}
	return true
}

// match reports whether e passes the filter.
func (m *matcher) match(e *entry) bool {
	switch {
	case m.none, !m.group.covers(entryGroup(e)), !m.sidesMatch(e.sides()),
		m.stat != 0 && e.status != m.stat,
		m.rec != 0 && e.recover != m.rec,
		m.execBound && !inBounds(e.executeAt, m.from, m.to, !m.f.ExecuteAtTo.IsZero()),
		m.nextBound && !inBounds(e.nextRetryAt, m.nrFrom, m.nrTo, !m.f.NextRetryAtTo.IsZero()),
		e.retries < m.f.MinRetries,
		m.f.ID != "" && e.id != m.id,
		m.f.IDPrefix != "" && !strings.HasPrefix(unpackID(e.id), m.f.IDPrefix),
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
