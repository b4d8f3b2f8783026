package index

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/amends-dev/amends/api"
)

// The index keeps its entries in ordered chunk sets (chunked.Set), one
// per sort order and one of due candidates, so a page or a due batch costs
// O(log n + what it reads), not O(n).

// The orders of the index's sets.
type (
	byPos     struct{}
	byPair    struct{}
	byOpenRec struct{}
)

func (byPos) Compare(a, b pos) int         { return cmpPos(a, b) }
func (byPair) Compare(a, b pair) int       { return cmpPair(a, b) }
func (byOpenRec) Compare(a, b openRec) int { return cmpOpenRec(a, b) }

// The sorts of a bulk load (chunked.Sorter), with the comparison inlined.
func (byPos) Sort(vs []pos)         { slices.SortFunc(vs, cmpPos) }
func (byPair) Sort(vs []pair)       { slices.SortFunc(vs, cmpPair) }
func (byOpenRec) Sort(vs []openRec) { slices.SortFunc(vs, cmpOpenRec) }

// pos is an entry's place in one order: the sort key, then a hash of the
// record id, so ties break the same way on every instance and a cursor
// taken on one instance works on another; slot breaks the (practically
// impossible) tie of two ids with one 64-bit hash.
type pos struct {
	key  int64
	tie  uint64
	slot uint32
}

// cmpPos orders positions by key, then tie, then slot.
func cmpPos(a, b pos) int {
	switch {
	case a.key != b.key:
		return cmp.Compare(a.key, b.key)
	case a.tie != b.tie:
		return cmp.Compare(a.tie, b.tie)
	}
	return cmp.Compare(a.slot, b.slot)
}

// before reports whether a sorts before the point (key, tie), ignoring slots.
func (a pos) before(key int64, tie uint64) bool {
	return a.key < key || a.key == key && a.tie < tie
}

// same reports whether a is at the point (key, tie).
func (a pos) same(key int64, tie uint64) bool { return a.key == key && a.tie == tie }

// lowest and highest are the first and last pos of the point (key, tie).
func lowest(key int64, tie uint64) pos  { return pos{key, tie, 0} }
func highest(key int64, tie uint64) pos { return pos{key, tie, math.MaxUint32} }

// idTie hashes a record id (FNV-1a, 64 bits): stable across processes.
func idTie(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// pair is an instant, the slot of the record it belongs to and a tag that
// sorts before both: a group's unfinished records by cell then executeAt,
// the instants at which records change cells.
type pair struct {
	at   int64
	slot uint32
	tag  uint8
}

// openRec is an unfinished record of a group by executeAt, with what the
// oldest and newest failure of a selection by aggregate context, aggregate
// type, function kind, nextRetryAt or retries read of it: those are
// checked without reading the entry.
type openRec struct {
	at, nextRetryAt     int64
	slot                uint32
	aggContext, aggType uint32
	kind, retries       uint8 // retries capped at 255
}

func newOpenRec(e *entry, slot uint32) openRec {
	return openRec{at: e.executeAt, nextRetryAt: e.nextRetryAt, slot: slot, aggContext: e.aggContext, aggType: e.aggType,
		kind: e.kind, retries: uint8(min(max(e.retries, 0), 255))}
}

func cmpOpenRec(a, b openRec) int {
	if a.at != b.at {
		return cmp.Compare(a.at, b.at)
	}
	return cmp.Compare(a.slot, b.slot)
}

func cmpPair(a, b pair) int {
	switch {
	case a.tag != b.tag:
		return int(a.tag) - int(b.tag)
	case a.at < b.at:
		return -1
	case a.at > b.at:
		return 1
	case a.slot < b.slot:
		return -1
	case a.slot > b.slot:
		return 1
	}
	return 0
}

// sortField is a SortField's position in SortFields and in Index.orders.
type sortField int

const numSortFields = 3

func fieldOf(s api.Sort) (sortField, error) {
	if s.Field == "" {
		return 0, nil
	}
	i := slices.Index(api.SortFields, s.Field)
	if i < 0 {
		return 0, fmt.Errorf("sort field must be one of %v, got %q: %w", api.SortFields, s.Field, ErrInvalidQuery)
	}
	return sortField(i), nil
}

// key is e's sort key in order f.
func (f sortField) key(e *entry) int64 {
	switch f {
	case 1:
		return e.nextRetryAt
	case 2:
		return int64(e.retries)
	default:
		return e.executeAt
	}
}
