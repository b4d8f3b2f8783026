package projection

import (
	"slices"
	"sort"
)

// pair is an instant and the slot of the record it belongs to.
type pair struct {
	at   int64
	slot uint32
}

func cmpPair(a, b pair) int {
	switch {
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

// pairs is a set of pairs in (at, slot) order, kept as sorted chunks like
// sorted: insert and remove cost a binary search and a move of at most one
// chunk. It answers no ranks, only walks from either end and from an
// instant. Not safe for concurrent use; the Index's lock guards it.
type pairs struct {
	chunks [][]pair
	lasts  []pair
	n      int
}

// chunkOf returns the first chunk whose last pair is >= p.
func (s *pairs) chunkOf(p pair) int {
	return sort.Search(len(s.lasts), func(i int) bool { return cmpPair(s.lasts[i], p) >= 0 })
}

func (s *pairs) insert(p pair) {
	s.n++
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, []pair{p})
		s.lasts = append(s.lasts, p)
		return
	}
	i := min(s.chunkOf(p), len(s.chunks)-1)
	if c := s.chunks[i]; len(c) == chunkMax {
		half := chunkMax / 2
		left, right := make([]pair, half, chunkMax), make([]pair, chunkMax-half, chunkMax)
		copy(left, c[:half])
		copy(right, c[half:])
		s.chunks[i] = left
		s.chunks = slices.Insert(s.chunks, i+1, right)
		s.lasts[i] = left[half-1]
		s.lasts = slices.Insert(s.lasts, i+1, right[len(right)-1])
		if cmpPair(p, left[half-1]) > 0 {
			i++
		}
	}
	c := s.chunks[i]
	j, _ := slices.BinarySearchFunc(c, p, cmpPair)
	c = slices.Insert(c, j, p)
	s.chunks[i] = c
	s.lasts[i] = c[len(c)-1]
}

// remove deletes p and reports whether it was there.
func (s *pairs) remove(p pair) bool {
	i := s.chunkOf(p)
	if i == len(s.chunks) {
		return false
	}
	c := s.chunks[i]
	j, ok := slices.BinarySearchFunc(c, p, cmpPair)
	if !ok {
		return false
	}
	s.n--
	if len(c) == 1 {
		s.chunks = slices.Delete(s.chunks, i, i+1)
		s.lasts = slices.Delete(s.lasts, i, i+1)
		return true
	}
	c = slices.Delete(c, j, j+1)
	s.chunks[i] = c
	s.lasts[i] = c[len(c)-1]
	return true
}

// from calls f for every pair >= p in order until f returns false.
func (s *pairs) from(p pair, f func(pair) bool) {
	i := s.chunkOf(p)
	if i == len(s.chunks) {
		return
	}
	j, _ := slices.BinarySearchFunc(s.chunks[i], p, cmpPair)
	for ; i < len(s.chunks); i, j = i+1, 0 {
		for _, x := range s.chunks[i][j:] {
			if !f(x) {
				return
			}
		}
	}
}

// before calls f for every pair < p in descending order until f returns
// false.
func (s *pairs) before(p pair, f func(pair) bool) {
	i := min(s.chunkOf(p), len(s.chunks)-1)
	if i < 0 {
		return
	}
	j, _ := slices.BinarySearchFunc(s.chunks[i], p, cmpPair)
	for ; i >= 0; i-- {
		c := s.chunks[i]
		if j < 0 {
			j = len(c)
		}
		for k := j - 1; k >= 0; k-- {
			if !f(c[k]) {
				return
			}
		}
		j = -1
	}
}

// first and last return the smallest and largest pair; the set must not be
// empty.
func (s *pairs) first() pair { return s.chunks[0][0] }
func (s *pairs) last() pair {
	c := s.chunks[len(s.chunks)-1]
	return c[len(c)-1]
}

// popThrough removes and returns every pair with at <= t, in order.
func (s *pairs) popThrough(t int64) []pair {
	var out []pair
	drop := 0
	for _, c := range s.chunks {
		j := sort.Search(len(c), func(j int) bool { return c[j].at > t })
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
