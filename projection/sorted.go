package projection

import (
	"cmp"
	"slices"
	"sort"
)

// sorted is a multiset of ordered values kept as a list of sorted chunks
// of at most chunkMax values: insert and remove cost a binary search and a
// move of at most one chunk, counting the values below a bound costs a
// binary search and a Fenwick tree's prefix sum over the chunks. The values are
// stored unboxed, 8 bytes each for int64 and uint64 at about 75 % fill, and
// hold no pointers for the garbage collector to follow. Not safe for
// concurrent use; the Index's lock guards it.
type sorted[T cmp.Ordered] struct {
	chunks [][]T
	// lasts[i] is the last value of chunks[i]: the binary search over the
	// chunks reads one array instead of every chunk it passes.
	lasts []T
	// fen is a Fenwick tree of the chunks' lengths once there are more
	// than fenFrom chunks, so counting the values below a bound costs
	// O(log chunks), not a sum over them.
	fen []int32
	n   int
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

// before returns the number of values in chunks[:i].
func (s *sorted[T]) before(i int) int {
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

// build replaces the set's values with vs, which are sorted. The set keeps
// vs's backing array; its chunks are three quarters full (chunkFill).
func (s *sorted[T]) build(vs []T) {
	s.chunks, s.lasts, s.n = nil, nil, len(vs)
	for len(vs) > 0 {
		k := min(len(vs), chunkFill)
		c := vs[:k:k]
		if len(vs) == k {
			c = vs
		}
		s.chunks = append(s.chunks, c)
		s.lasts = append(s.lasts, c[len(c)-1])
		vs = vs[k:]
	}
	s.reshape()
}

// chunkOf returns the first chunk whose last value is >= v, len(chunks) if
// none is.
func (s *sorted[T]) chunkOf(v T) int {
	i, _ := slices.BinarySearch(s.lasts, v)
	return i
}

func (s *sorted[T]) insert(v T) {
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, []T{v})
		s.lasts = append(s.lasts, v)
		return
	}
	i := s.chunkOf(v)
	if i == len(s.chunks) {
		i--
	}
	c := s.chunks[i]
	if len(c) == chunkMax {
		half := chunkMax / 2
		left, right := make([]T, half, chunkMax), make([]T, chunkMax-half, chunkMax)
		copy(left, c[:half])
		copy(right, c[half:])
		s.chunks[i] = left
		s.chunks = slices.Insert(s.chunks, i+1, right)
		s.lasts[i] = left[half-1]
		s.lasts = slices.Insert(s.lasts, i+1, right[len(right)-1])
		if v > left[half-1] {
			i++
		}
		s.place(i, v)
		s.reshape()
		return
	}
	s.place(i, v)
	s.grew(i, 1)
}

// place inserts v in chunks[i], where it belongs.
func (s *sorted[T]) place(i int, v T) {
	c := s.chunks[i]
	j, _ := slices.BinarySearch(c, v)
	c = slices.Insert(c, j, v)
	s.chunks[i] = c
	s.lasts[i] = c[len(c)-1]
}

// remove deletes one occurrence of v and reports whether there was one.
func (s *sorted[T]) remove(v T) bool {
	i := s.chunkOf(v)
	if i == len(s.chunks) {
		return false
	}
	c := s.chunks[i]
	j, ok := slices.BinarySearch(c, v)
	if !ok {
		return false
	}
	s.n--
	if len(c) == 1 {
		s.chunks = slices.Delete(s.chunks, i, i+1)
		s.lasts = slices.Delete(s.lasts, i, i+1)
		s.reshape()
		return true
	}
	c = slices.Delete(c, j, j+1)
	s.chunks[i] = c
	s.lasts[i] = c[len(c)-1]
	s.grew(i, -1)
	return true
}

// less returns the number of values < v.
func (s *sorted[T]) less(v T) int {
	i := s.chunkOf(v)
	n := s.before(i)
	if i < len(s.chunks) {
		j, _ := slices.BinarySearch(s.chunks[i], v)
		n += j
	}
	return n
}

// atMost returns the number of values <= v.
func (s *sorted[T]) atMost(v T) int {
	i := sort.Search(len(s.lasts), func(i int) bool { return s.lasts[i] > v })
	n := s.before(i)
	if i < len(s.chunks) {
		c := s.chunks[i]
		n += sort.Search(len(c), func(j int) bool { return c[j] > v })
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

// first and last return the smallest and largest value; the set must not
// be empty.
func (s *sorted[T]) first() T { return s.chunks[0][0] }
func (s *sorted[T]) last() T {
	c := s.chunks[len(s.chunks)-1]
	return c[len(c)-1]
}

// from calls f for every value >= v in order until f returns false.
func (s *sorted[T]) from(v T, f func(T) bool) {
	i := s.chunkOf(v)
	if i == len(s.chunks) {
		return
	}
	j, _ := slices.BinarySearch(s.chunks[i], v)
	for ; i < len(s.chunks); i, j = i+1, 0 {
		for _, x := range s.chunks[i][j:] {
			if !f(x) {
				return
			}
		}
	}
}
