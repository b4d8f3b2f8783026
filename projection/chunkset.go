package projection

import (
	"cmp"
	"slices"
	"sort"
)

// chunkSet is an ordered set kept as a list of sorted chunks of at most
// chunkMax values, like sorted but for any type with a comparison and
// without ranks: insert and remove cost a binary search and a move of at
// most one chunk; walks start anywhere in O(log n). Built from sorted
// values (build) its chunks are three quarters full, so the next inserts
// do not split them, where a B-tree filled in order leaves its nodes half
// full. Not safe for concurrent use; the Index's lock guards it.
//
// O orders the values; its zero value is used, so a zero chunkSet is an
// empty set.
type chunkSet[T any, O order[T]] struct {
	chunks [][]T
	// lasts[i] is the last value of chunks[i]: the binary search over the
	// chunks reads one array instead of every chunk it passes.
	lasts []T
	n     int
}

// order is a comparison of values, as cmp.Compare's.
type order[T any] interface{ compare(a, b T) int }

// The orders of the index's sets.
type (
	byValue[T cmp.Ordered] struct{}
	byPos                  struct{}
	byPair                 struct{}
	byOpenRec              struct{}
)

func (byValue[T]) compare(a, b T) int      { return cmp.Compare(a, b) }
func (byPos) compare(a, b pos) int         { return cmpPos(a, b) }
func (byPair) compare(a, b pair) int       { return cmpPair(a, b) }
func (byOpenRec) compare(a, b openRec) int { return cmpOpenRec(a, b) }

func (s *chunkSet[T, O]) cmp(a, b T) int {
	var o O
	return o.compare(a, b)
}

// chunkFill is how full build leaves the chunks.
const chunkFill = chunkMax * 3 / 4

// build replaces the set's values with vs, which are sorted and distinct.
// The set keeps vs's backing array.
func (s *chunkSet[T, O]) build(vs []T) {
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
func (s *chunkSet[T, O]) chunkOf(v T) int {
	return sort.Search(len(s.lasts), func(i int) bool { return s.cmp(s.lasts[i], v) >= 0 })
}

// insert adds v. It returns the chunk v went to, and whether the chunks
// were split or made (the others keep their positions otherwise).
func (s *chunkSet[T, O]) insert(v T) (chunk int, split bool) {
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, []T{v})
		s.lasts = append(s.lasts, v)
		return 0, true
	}
	i := min(s.chunkOf(v), len(s.chunks)-1)
	if c := s.chunks[i]; len(c) >= chunkMax {
		split = true
		half := len(c) / 2
		left, right := make([]T, half, chunkMax), make([]T, len(c)-half, chunkMax)
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

// remove deletes one occurrence of v and reports whether there was one,
// the chunk it was in, and whether that chunk was dropped.
func (s *chunkSet[T, O]) remove(v T) (ok bool, chunk int, dropped bool) {
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

// first and last return the smallest and largest value; the set must not
// be empty.
func (s *chunkSet[T, O]) first() T { return s.chunks[0][0] }
func (s *chunkSet[T, O]) last() T {
	c := s.chunks[len(s.chunks)-1]
	return c[len(c)-1]
}

// each calls f for every value in order until f returns false.
func (s *chunkSet[T, O]) each(f func(T) bool) {
	for _, c := range s.chunks {
		for _, x := range c {
			if !f(x) {
				return
			}
		}
	}
}

// from calls f for every value >= v in order until f returns false.
func (s *chunkSet[T, O]) from(v T, f func(T) bool) {
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

// below calls f for every value < v in order until f returns false.
func (s *chunkSet[T, O]) below(v T, f func(T) bool) {
	s.each(func(x T) bool { return s.cmp(x, v) < 0 && f(x) })
}

// eachDesc calls f for every value in descending order until f returns
// false.
func (s *chunkSet[T, O]) eachDesc(f func(T) bool) {
	for i := len(s.chunks) - 1; i >= 0; i-- {
		c := s.chunks[i]
		for k := len(c) - 1; k >= 0; k-- {
			if !f(c[k]) {
				return
			}
		}
	}
}

// before calls f for every value < v in descending order until f returns
// false; with orEqual, for every value <= v.
func (s *chunkSet[T, O]) before(v T, orEqual bool, f func(T) bool) {
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

// popWhile removes and returns the values from the first on for which
// keep holds, in order, stopping at the first for which it does not.
func (s *chunkSet[T, O]) popWhile(keep func(T) bool) []T {
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
