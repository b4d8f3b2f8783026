// Package chunked holds the ordered containers of the index: Set, an
// ordered set kept as a list of sorted chunks, and Multiset, which also
// counts. Each has one operation to add a value, Add, which inserts it,
// or, between BeginBulk and EndBulk, appends it to be sorted once: so a
// structure filled in bulk and one kept current value by value are made
// by the same calls. Not safe for concurrent use; the index's lock
// guards them.
package chunked

import (
	"slices"
	"sort"
)

// Order compares values as cmp.Compare does. Its zero value is used.
type Order[T any] interface{ Compare(a, b T) int }

// Sorter is an Order that also sorts a slice by itself, faster than a
// sort through Compare can (a generic Set calls Compare indirectly, so the
// comparison is not inlined). EndBulk uses it when the Order has it.
type Sorter[T any] interface {
	Order[T]
	Sort(vs []T)
}

// Set is an ordered set kept as a list of sorted chunks of at most
// ChunkMax values: insert and remove cost a binary search and a move of
// at most one chunk; walks start anywhere in O(log n). Built in bulk its
// chunks are three quarters full, so the next inserts do not split them,
// where a B-tree filled in order leaves its nodes half full. The zero Set
// is empty.
type Set[T any, O Order[T]] struct {
	chunks [][]T
	// lasts[i] is the last value of chunks[i]: the binary search over the
	// chunks reads one array instead of every chunk it passes.
	lasts []T
	n     int
	// bulk: Add appends to pending until EndBulk.
	bulk    bool
	pending []T
}

// ChunkMax is the most values a chunk holds.
const ChunkMax = 512

// chunkFill is how full a bulk build leaves the chunks.
const chunkFill = ChunkMax * 3 / 4

func (s *Set[T, O]) cmp(a, b T) int {
	var o O
	return o.Compare(a, b)
}

// Len returns the number of values.
func (s *Set[T, O]) Len() int { return s.n }

// BeginBulk makes the next Adds append, until EndBulk sorts them in. The
// set must be empty.
func (s *Set[T, O]) BeginBulk() { s.bulk = true }

// EndBulk sorts the values added since BeginBulk, which must be distinct,
// into the set.
func (s *Set[T, O]) EndBulk() {
	if !s.bulk {
		return
	}
	vs := s.pending
	s.bulk, s.pending = false, nil
	var o O
	if so, ok := any(o).(Sorter[T]); ok {
		so.Sort(vs)
	} else {
		slices.SortFunc(vs, s.cmp)
	}
	s.build(vs)
}

// build replaces the set's values with vs, which are sorted and distinct.
// The set keeps vs's backing array.
func (s *Set[T, O]) build(vs []T) {
	s.chunks, s.lasts, s.n = nil, nil, len(vs)
	for len(vs) > 0 {
		k := min(len(vs), chunkFill)
		c := vs[:k:k]
		if len(vs) == k {
			c = vs // the last chunk keeps the slack
		}
		s.chunks = append(s.chunks, c)
		s.lasts = append(s.lasts, c[len(c)-1])
		vs = vs[k:]
	}
}

// chunkOf returns the first chunk whose last value is >= v.
func (s *Set[T, O]) chunkOf(v T) int {
	return sort.Search(len(s.lasts), func(i int) bool { return s.cmp(s.lasts[i], v) >= 0 })
}

// Add adds v: inserts it, or appends it in bulk mode.
func (s *Set[T, O]) Add(v T) {
	if s.bulk {
		s.pending = append(s.pending, v)
		return
	}
	s.insert(v)
}

// insert adds v. It returns the chunk v went to, and whether the chunks
// were split or made (the others keep their positions otherwise).
func (s *Set[T, O]) insert(v T) (chunk int, split bool) {
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, []T{v})
		s.lasts = append(s.lasts, v)
		return 0, true
	}
	i := min(s.chunkOf(v), len(s.chunks)-1)
	if c := s.chunks[i]; len(c) >= ChunkMax {
		split = true
		half := len(c) / 2
		left, right := make([]T, half, ChunkMax), make([]T, len(c)-half, ChunkMax)
		copy(left, c[:half])
		copy(right, c[half:])
		s.chunks[i] = left
		s.chunks = slices.Insert(s.chunks, i+1, right)
		s.lasts[i] = left[half-1]
		s.lasts = slices.Insert(s.lasts, i+1, right[len(right)-1])
		if s.cmp(v, left[half-1]) > 0 {
			i++
		}
	}
	c := s.chunks[i]
	j, _ := slices.BinarySearchFunc(c, v, s.cmp)
	c = slices.Insert(c, j, v)
	s.chunks[i] = c
	s.lasts[i] = c[len(c)-1]
	return i, split
}

// Remove deletes one occurrence of v and reports whether there was one.
// Not in bulk mode.
func (s *Set[T, O]) Remove(v T) bool {
	ok, _, _ := s.remove(v)
	return ok
}

// remove is Remove that also returns the chunk v was in and whether that
// chunk was dropped.
func (s *Set[T, O]) remove(v T) (ok bool, chunk int, dropped bool) {
	i := s.chunkOf(v)
	if i == len(s.chunks) {
		return false, i, false
	}
	c := s.chunks[i]
	j, ok := slices.BinarySearchFunc(c, v, s.cmp)
	if !ok {
		return false, i, false
	}
	s.n--
	if len(c) == 1 {
		s.chunks = slices.Delete(s.chunks, i, i+1)
		s.lasts = slices.Delete(s.lasts, i, i+1)
		return true, i, true
	}
	c = slices.Delete(c, j, j+1)
	s.chunks[i] = c
	s.lasts[i] = c[len(c)-1]
	return true, i, false
}

// First and Last return the smallest and largest value; the set must not
// be empty.
func (s *Set[T, O]) First() T { return s.chunks[0][0] }

// Last: see First.
func (s *Set[T, O]) Last() T {
	c := s.chunks[len(s.chunks)-1]
	return c[len(c)-1]
}

// Each calls f for every value in order until f returns false.
func (s *Set[T, O]) Each(f func(T) bool) {
	for _, c := range s.chunks {
		for _, x := range c {
			if !f(x) {
				return
			}
		}
	}
}

// From calls f for every value >= v in order until f returns false.
func (s *Set[T, O]) From(v T, f func(T) bool) {
	i := s.chunkOf(v)
	if i == len(s.chunks) {
		return
	}
	j, _ := slices.BinarySearchFunc(s.chunks[i], v, s.cmp)
	for ; i < len(s.chunks); i, j = i+1, 0 {
		for _, x := range s.chunks[i][j:] {
			if !f(x) {
				return
			}
		}
	}
}

// Below calls f for every value < v in order until f returns false.
func (s *Set[T, O]) Below(v T, f func(T) bool) {
	s.Each(func(x T) bool { return s.cmp(x, v) < 0 && f(x) })
}

// EachDesc calls f for every value in descending order until f returns
// false.
func (s *Set[T, O]) EachDesc(f func(T) bool) {
	for i := len(s.chunks) - 1; i >= 0; i-- {
		c := s.chunks[i]
		for k := len(c) - 1; k >= 0; k-- {
			if !f(c[k]) {
				return
			}
		}
	}
}

// Before calls f for every value < v in descending order until f returns
// false; with orEqual, for every value <= v.
func (s *Set[T, O]) Before(v T, orEqual bool, f func(T) bool) {
	if len(s.chunks) == 0 {
		return
	}
	i := min(s.chunkOf(v), len(s.chunks)-1)
	c := s.chunks[i]
	j, found := slices.BinarySearchFunc(c, v, s.cmp)
	if found && orEqual {
		j++
	}
	for {
		for k := j - 1; k >= 0; k-- {
			if !f(c[k]) {
				return
			}
		}
		if i--; i < 0 {
			return
		}
		c = s.chunks[i]
		j = len(c)
	}
}

// PopWhile removes and returns the values from the first on for which
// keep holds, in order, stopping at the first for which it does not.
func (s *Set[T, O]) PopWhile(keep func(T) bool) []T {
	var out []T
	drop := 0
	for _, c := range s.chunks {
		j := sort.Search(len(c), func(j int) bool { return !keep(c[j]) })
		out = append(out, c[:j]...)
		if j < len(c) {
			if j > 0 {
				s.chunks[drop] = slices.Delete(c, 0, j)
			}
			break
		}
		drop++
	}
	if drop > 0 {
		s.chunks = slices.Delete(s.chunks, 0, drop)
		s.lasts = slices.Delete(s.lasts, 0, drop)
	}
	s.n -= len(out)
	return out
}
