package projection

import (
	"cmp"
	"math"
)

// The index keeps its entries in ordered chunk sets (chunkset.go), one per
// sort order and one of due candidates, so a page or a due batch costs
// O(log n + what it reads), not O(n).

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
