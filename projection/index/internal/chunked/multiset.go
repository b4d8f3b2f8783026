package chunked

import (
	"cmp"
	"slices"
)

// Natural orders values by cmp.Compare.
type Natural[T cmp.Ordered] struct{}

// Compare is cmp.Compare.
func (Natural[T]) Compare(a, b T) int { return cmp.Compare(a, b) }

// Multiset is a multiset of ordered values kept as a Set that also
// counts: counting the values below a bound costs a binary search and a
// Fenwick tree's prefix sum over the chunks. The values are stored
// unboxed, 8 bytes each for int64 and uint64 at about 75 % fill, and hold
// no pointers for the garbage collector to follow. The zero Multiset is
// empty.
type Multiset[T cmp.Ordered] struct {
	set Set[T, Natural[T]]
	// fen is a Fenwick tree of the chunks' lengths once there are more
	// than fenFrom chunks, so counting the values below a bound costs
	// O(log chunks), not a sum over them.
	fen []int32
}

const fenFrom = 16

// Len returns the number of values.
func (s *Multiset[T]) Len() int { return s.set.n }

// BeginBulk and EndBulk: see Set's.
func (s *Multiset[T]) BeginBulk() { s.set.BeginBulk() }

// EndBulk sorts the values added since BeginBulk into the multiset.
func (s *Multiset[T]) EndBulk() {
	if !s.set.bulk {
		return
	}
	vs := s.set.pending
	s.set.bulk, s.set.pending = false, nil
	SortValues(vs)
	s.set.build(vs)
	s.reshape()
}

// reshape rebuilds fen after chunks were split or dropped.
func (s *Multiset[T]) reshape() {
	chunks := s.set.chunks
	if len(chunks) <= fenFrom {
		s.fen = nil
		return
	}
	s.fen = slices.Grow(s.fen[:0], len(chunks))[:len(chunks)]
	for i, c := range chunks {
		s.fen[i] = int32(len(c))
	}
	for i := range s.fen {
		if p := i | (i + 1); p < len(s.fen) {
			s.fen[p] += s.fen[i]
		}
	}
}

// grew records that chunks[i] changed length by d.
func (s *Multiset[T]) grew(i, d int) {
	for j := i; j < len(s.fen); j |= j + 1 {
		s.fen[j] += int32(d)
	}
}

// countBefore returns the number of values in chunks[:i].
func (s *Multiset[T]) countBefore(i int) int {
	n := 0
	if s.fen == nil {
		for _, c := range s.set.chunks[:i] {
			n += len(c)
		}
		return n
	}
	for j := i - 1; j >= 0; j = j&(j+1) - 1 {
		n += int(s.fen[j])
	}
	return n
}

// chunkOf returns the first chunk whose last value is >= v, len(chunks)
// if none is.
func (s *Multiset[T]) chunkOf(v T) int {
	i, _ := slices.BinarySearch(s.set.lasts, v)
	return i
}

// Add adds v: inserts it, or appends it in bulk mode.
func (s *Multiset[T]) Add(v T) {
	if s.set.bulk {
		s.set.pending = append(s.set.pending, v)
		return
	}
	if i, split := s.set.insert(v); split {
		s.reshape()
	} else {
		s.grew(i, 1)
	}
}

// Remove deletes one occurrence of v and reports whether there was one.
// Not in bulk mode.
func (s *Multiset[T]) Remove(v T) bool {
	ok, i, dropped := s.set.remove(v)
	switch {
	case dropped:
		s.reshape()
	case ok:
		s.grew(i, -1)
	}
	return ok
}

// Less returns the number of values < v.
func (s *Multiset[T]) Less(v T) int {
	i := s.chunkOf(v)
	n := s.countBefore(i)
	if i < len(s.set.chunks) {
		j, _ := slices.BinarySearch(s.set.chunks[i], v)
		n += j
	}
	return n
}

// Between returns the number of values x with from <= x and, if hasTo,
// x < to.
func (s *Multiset[T]) Between(from, to T, hasTo bool) int {
	n := s.set.n
	if hasTo {
		n = s.Less(to)
	}
	return max(0, n-s.Less(from))
}

// Ceil returns the smallest value >= v; ok is false if there is none.
func (s *Multiset[T]) Ceil(v T) (x T, ok bool) {
	i := s.chunkOf(v)
	if i == len(s.set.chunks) {
		return x, false
	}
	c := s.set.chunks[i]
	j, _ := slices.BinarySearch(c, v)
	return c[j], true
}

// Lower returns the largest value < v; ok is false if there is none.
func (s *Multiset[T]) Lower(v T) (x T, ok bool) {
	i := s.chunkOf(v)
	if i < len(s.set.chunks) {
		c := s.set.chunks[i]
		if j, _ := slices.BinarySearch(c, v); j > 0 {
			return c[j-1], true
		}
	}
	if i == 0 {
		return x, false
	}
	return s.set.lasts[i-1], true
}

// First and Last return the smallest and largest value; the multiset
// must not be empty.
func (s *Multiset[T]) First() T { return s.set.First() }

// Last: see First.
func (s *Multiset[T]) Last() T { return s.set.Last() }

// From calls f for every value >= v in order until f returns false.
func (s *Multiset[T]) From(v T, f func(T) bool) { s.set.From(v, f) }

// Chunks returns how many chunks hold the values (for tests of the
// Fenwick tree).
func (s *Multiset[T]) Chunks() int { return len(s.set.chunks) }
