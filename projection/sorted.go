package projection

import (
	"cmp"
	"slices"
)

// sorted is a multiset of ordered values kept as a chunkSet that also
// counts: counting the values below a bound costs a binary search and a
// Fenwick tree's prefix sum over the chunks. The values are stored unboxed,
// 8 bytes each for int64 and uint64 at about 75 % fill, and hold no
// pointers for the garbage collector to follow. Not safe for concurrent
// use; the Index's lock guards it.
type sorted[T cmp.Ordered] struct {
	chunkSet[T, byValue[T]]
	// fen is a Fenwick tree of the chunks' lengths once there are more
	// than fenFrom chunks, so counting the values below a bound costs
	// O(log chunks), not a sum over them.
	fen []int32
}

const fenFrom = 16

// reshape rebuilds fen after chunks were split or dropped.
func (s *sorted[T]) reshape() {
	if len(s.chunks) <= fenFrom {
		s.fen = nil
		return
	}
	s.fen = slices.Grow(s.fen[:0], len(s.chunks))[:len(s.chunks)]
	for i, c := range s.chunks {
		s.fen[i] = int32(len(c))
	}
	for i := range s.fen {
		if p := i | (i + 1); p < len(s.fen) {
			s.fen[p] += s.fen[i]
		}
	}
}

// grew records that chunks[i] changed length by d.
func (s *sorted[T]) grew(i, d int) {
	for j := i; j < len(s.fen); j |= j + 1 {
		s.fen[j] += int32(d)
	}
}

// countBefore returns the number of values in chunks[:i].
func (s *sorted[T]) countBefore(i int) int {
	n := 0
	if s.fen == nil {
		for _, c := range s.chunks[:i] {
			n += len(c)
		}
		return n
	}
	for j := i - 1; j >= 0; j = j&(j+1) - 1 {
		n += int(s.fen[j])
	}
	return n
}

const chunkMax = 512

// build replaces the set's values with vs, which are sorted (see
// chunkSet.build).
func (s *sorted[T]) build(vs []T) {
	s.chunkSet.build(vs)
	s.reshape()
}

// chunkOf returns the first chunk whose last value is >= v, len(chunks) if
// none is.
func (s *sorted[T]) chunkOf(v T) int {
	i, _ := slices.BinarySearch(s.lasts, v)
	return i
}

func (s *sorted[T]) insert(v T) {
	if i, split := s.chunkSet.insert(v); split {
		s.reshape()
	} else {
		s.grew(i, 1)
	}
}

// remove deletes one occurrence of v and reports whether there was one.
func (s *sorted[T]) remove(v T) bool {
	ok, i, dropped := s.chunkSet.remove(v)
	switch {
	case dropped:
		s.reshape()
	case ok:
		s.grew(i, -1)
	}
	return ok
}

// less returns the number of values < v.
func (s *sorted[T]) less(v T) int {
	i := s.chunkOf(v)
	n := s.countBefore(i)
	if i < len(s.chunks) {
		j, _ := slices.BinarySearch(s.chunks[i], v)
		n += j
	}
	return n
}

// atLeast returns the smallest value >= v; ok is false if there is none.
func (s *sorted[T]) atLeast(v T) (x T, ok bool) {
	i := s.chunkOf(v)
	if i == len(s.chunks) {
		return x, false
	}
	c := s.chunks[i]
	j, _ := slices.BinarySearch(c, v)
	return c[j], true
}

// below returns the largest value < v; ok is false if there is none.
func (s *sorted[T]) below(v T) (x T, ok bool) {
	i := s.chunkOf(v)
	if i < len(s.chunks) {
		c := s.chunks[i]
		if j, _ := slices.BinarySearch(c, v); j > 0 {
			return c[j-1], true
		}
	}
	if i == 0 {
		return x, false
	}
	return s.lasts[i-1], true
}
