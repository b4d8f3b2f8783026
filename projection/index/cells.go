package index

import (
	"math"
	"time"

	"github.com/amends-dev/amends/aggregate"
)

// Counts kept up to date on every put and remove (counts.go), so that
// Count and Summary cost what their answer has, not what the index holds.
//
// Every record is in one cell: its status, recoverability, whether its
// retries are below maxRetries and, for the records whose views change as
// time passes, its situation at the index's now (whether its attempt has
// timed out, whether its nextRetryAt has passed). Within a cell every
// predicate of the aggregate, every view included, gives one answer, so a
// view is a set of cells. Which views hold in a cell is decided by calling
// aggregate.View.Contains on a representative state, so the counts follow
// the aggregate's predicates and not a copy of their conditions; a
// property test compares them with a scan.
//
// The index's now (Index.cursor) only moves forward: a query for a later
// now first moves the records whose situation changed by then to their
// new cell (counts.ahead holds, per such record, the next instant its
// situation changes). Each record moves at most twice per attempt.
//
// The records are also split into groups, one per (function context,
// processor, function, error code, fingerprint): the set of names a
// deployment's code can produce, not its traffic. A group counts its
// records per cell; keeps their executeAt and nextRetryAt sorted and a
// histogram of their retries per summary class (succeeded, retryable,
// exhausted, and prepared); per value of aggregate context, aggregate type
// and function kind, a count per cell; and its unfinished records in
// executeAt order, for the oldest and newest failure of any selection.
// Over all records the counts keep, per cell, the same sets and
// histogram, and per value of aggregate context, aggregate type and
// function kind a count per cell.

// combo numbers the four time situations of a record: bit 0 its attempt
// has timed out (Timeout), bit 1 now >= nextRetryAt.
type combo = int

const (
	comboTimedOut = 1
	comboNextDue  = 2
)

// cellIndex numbers the cells: status (0 unknown, then aggregate.Statuses),
// recoverability (likewise), below the threshold, situation.
func cellIndex(status, recover uint8, below bool, c combo) int {
	i := (int(status)*4+int(recover))*8 + c
	if below {
		i += 4
	}
	return i
}

const numCells = 4 * 4 * 2 * 4

// cellKind is what the predicates say of every record of one cell.
type cellKind struct {
	status, recover uint8
	below           bool
	combo           combo
	// in[v]: View v contains the cell's records.
	in [8]bool
	// changing: the views of the records of this status, recoverability
	// and threshold change with time; their cell follows the index's now.
	// The cells of the other records have situation 0 at every now.
	changing bool
	// retryable, exhausted, prepared, finished: the summary's per-group
	// counters (see addTo).
	retryable, exhausted, prepared, finished bool
}

// kinds holds the cellKind of every cell index.
var kinds = func() (out [numCells]cellKind) {
	for st := range uint8(4) {
		for rc := range uint8(4) {
			for _, below := range []bool{false, true} {
				for c := range 4 {
					out[cellIndex(st, rc, below, c)] = newCellKind(st, rc, below, c)
				}
			}
		}
	}
	return out
}()

func newCellKind(st, rc uint8, below bool, c combo) cellKind {
	k := cellKind{status: st, recover: rc, below: below, combo: c}
	const now = 1_000_000
	var in [4][8]bool
	for cc := range 4 {
		s := repState(st, rc, below, cc, now)
		for vi, v := range aggregate.Views {
			in[cc][vi] = v.Contains(&s, time.UnixMilli(now))
		}
	}
	k.in = in[c]
	for cc := 1; cc < 4; cc++ {
		k.changing = k.changing || in[cc] != in[0]
	}
	s := repState(st, rc, below, c, now)
	k.retryable = s.IsRetryable()
	k.finished = s.Status == aggregate.StatusSucceeded
	k.exhausted = !k.finished && !s.IsBelowRetryThreshold()
	k.prepared = !k.finished && s.Status == aggregate.StatusPrepared
	return k
}

// repState is a record of the cell in situation c at now (epoch ms).
func repState(st, rc uint8, below bool, c combo, now int64) aggregate.State {
	s := aggregate.State{
		ID:          "representative",
		ExecuteAt:   now,
		RetrySpec:   aggregate.RetrySpec{MaxRetries: 1},
		RetryState:  aggregate.RetryState{Retries: 1, TimeoutAt: now, NextRetryAt: now + 1},
		Status:      enumValue(aggregate.Statuses, st),
		Recoverable: enumValue(aggregate.Recoverabilities, rc),
	}
	if below {
		s.RetryState.Retries = 0
	}
	if c&comboTimedOut != 0 {
		s.RetryState.TimeoutAt = now - 1
	}
	if c&comboNextDue != 0 {
		s.RetryState.NextRetryAt = now
	}
	return s
}

// viewIndex is v's position in aggregate.Views, -1 for "".
func viewIndex(v aggregate.View) int {
	for i, w := range aggregate.Views {
		if w == v {
			return i
		}
	}
	return -1
}

// timeDependent[v] reports whether View v's answer depends on now for
// some record.
var timeDependent = func() (out [8]bool) {
	for _, k := range kinds {
		if !k.changing {
			continue
		}
		base := &kinds[cellIndex(k.status, k.recover, k.below, 0)]
		for vi := range aggregate.Views {
			out[vi] = out[vi] || k.in[vi] != base.in[vi]
		}
	}
	return out
}()

// baseCell is e's cell at situation 0.
func (e *entry) baseCell() int {
	return cellIndex(e.status, e.recover, e.retries < e.maxRetries, 0)
}

// cellAt returns e's cell at now t (epoch ms).
func (e *entry) cellAt(t int64) uint8 {
	ci := e.baseCell()
	if kinds[ci].changing {
		if e.timeoutAt < t {
			ci |= comboTimedOut
		}
		if t >= e.nextRetryAt {
			ci |= comboNextDue
		}
	}
	return uint8(ci)
}

// nextChange returns the first instant after t at which e's cell changes;
// ok is false if it never does.
func (e *entry) nextChange(t int64) (at int64, ok bool) {
	if !kinds[e.baseCell()].changing {
		return 0, false
	}
	at = math.MaxInt64
	if e.timeoutAt != math.MaxInt64 && e.timeoutAt+1 > t {
		at, ok = e.timeoutAt+1, true
	}
	if e.nextRetryAt > t && e.nextRetryAt <= at {
		at, ok = e.nextRetryAt, true
	}
	return at, ok
}
