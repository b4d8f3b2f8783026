package chunked

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The chunk set keeps its values in order through bulk builds, inserts
// and removes that split and empty chunks, and walks like a sorted slice.
func TestSetIsASortedSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s Set[int, Natural[int]]
		var model []int
		if rapid.Bool().Draw(t, "build") {
			model = rapid.SliceOfNDistinct(rapid.IntRange(-3000, 3000), 0, 3000, rapid.ID).Draw(t, "built")
			s.BeginBulk()
			for _, v := range model { // in no order: EndBulk sorts
				s.Add(v)
			}
			require.Zero(t, s.Len(), "values added in bulk are in only after EndBulk")
			s.EndBulk()
			slices.Sort(model)
		}
		for range rapid.IntRange(0, 2000).Draw(t, "ops") {
			v := rapid.IntRange(-3000, 3000).Draw(t, "v")
			i, ok := slices.BinarySearch(model, v)
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				require.Equal(t, ok, s.Remove(v))
				if ok {
					model = slices.Delete(model, i, i+1)
				}
			case 1:
				got := s.PopWhile(func(x int) bool { return x <= v })
				k, _ := slices.BinarySearch(model, v+1)
				require.Equal(t, append([]int{}, model[:k]...), append([]int{}, got...))
				model = model[k:]
			default:
				if !ok {
					s.Add(v)
					model = slices.Insert(model, i, v)
				}
			}
		}
		require.Equal(t, len(model), s.Len())
		var all, desc []int
		s.Each(func(x int) bool { all = append(all, x); return true })
		s.EachDesc(func(x int) bool { desc = append(desc, x); return true })
		require.Equal(t, append([]int{}, model...), append([]int{}, all...))
		slices.Reverse(desc)
		require.Equal(t, append([]int{}, model...), append([]int{}, desc...))
		if len(model) > 0 {
			require.Equal(t, model[0], s.First())
			require.Equal(t, model[len(model)-1], s.Last())
		}
		for range 20 {
			v := rapid.IntRange(-3002, 3002).Draw(t, "q")
			less, found := slices.BinarySearch(model, v)
			var from, below, before, atMost []int
			s.From(v, func(x int) bool { from = append(from, x); return true })
			s.Below(v, func(x int) bool { below = append(below, x); return true })
			s.Before(v, false, func(x int) bool { before = append(before, x); return true })
			s.Before(v, true, func(x int) bool { atMost = append(atMost, x); return true })
			require.Equal(t, append([]int{}, model[less:]...), append([]int{}, from...), "From(%d)", v)
			require.Equal(t, append([]int{}, model[:less]...), append([]int{}, below...), "Below(%d)", v)
			slices.Reverse(before)
			require.Equal(t, append([]int{}, model[:less]...), append([]int{}, before...), "Before(%d)", v)
			upTo := less
			if found {
				upTo++
			}
			slices.Reverse(atMost)
			require.Equal(t, append([]int{}, model[:upTo]...), append([]int{}, atMost...), "Before(%d, orEqual)", v)
		}
	})
}

// The multiset keeps its values in order through bulk builds, inserts and
// removes that split and empty chunks, and counts like a sorted slice.
func TestMultisetIsASortedSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s Multiset[int64]
		var model []int64
		if rapid.Bool().Draw(t, "build") {
			s.BeginBulk()
			for range rapid.IntRange(0, 3000).Draw(t, "built") {
				v := int64(rapid.IntRange(-50, 50).Draw(t, "b"))
				s.Add(v)
				model = append(model, v)
			}
			s.EndBulk()
			slices.Sort(model)
		}
		for range rapid.IntRange(0, 3000).Draw(t, "ops") {
			v := int64(rapid.IntRange(-50, 50).Draw(t, "v"))
			if rapid.IntRange(0, 2).Draw(t, "op") == 0 {
				i, ok := slices.BinarySearch(model, v)
				if ok {
					model = slices.Delete(model, i, i+1)
				}
				require.Equal(t, ok, s.Remove(v))
			} else {
				i, _ := slices.BinarySearch(model, v)
				model = slices.Insert(model, i, v)
				s.Add(v)
			}
		}
		var got []int64
		s.From(math.MinInt64, func(v int64) bool { got = append(got, v); return true })
		require.Equal(t, len(model), s.Len())
		if len(model) == 0 {
			require.Empty(t, got)
			return
		}
		require.Equal(t, model, got)
		require.Equal(t, model[0], s.First())
		require.Equal(t, model[len(model)-1], s.Last())
		for range 20 {
			v := int64(rapid.IntRange(-52, 52).Draw(t, "q"))
			less, _ := slices.BinarySearch(model, v)
			require.Equal(t, less, s.Less(v), "Less(%d)", v)
			var tail []int64
			s.From(v, func(x int64) bool { tail = append(tail, x); return true })
			require.True(t, slices.Equal(model[less:], tail), "From(%d)", v)
			x, ok := s.Ceil(v)
			require.Equal(t, less < len(model), ok, "Ceil(%d)", v)
			if ok {
				require.Equal(t, model[less], x, "Ceil(%d)", v)
			}
			x, ok = s.Lower(v)
			require.Equal(t, less > 0, ok, "Lower(%d)", v)
			if ok {
				require.Equal(t, model[less-1], x, "Lower(%d)", v)
			}
			w := v + int64(rapid.IntRange(0, 10).Draw(t, "w"))
			upTo, _ := slices.BinarySearch(model, w)
			require.Equal(t, len(model)-less, s.Between(v, w, false), "Between(%d, -)", v)
			require.Equal(t, max(0, upTo-less), s.Between(v, w, true), "Between(%d, %d)", v, w)
		}
	})
}

// With more chunks than fenFrom, the Fenwick tree counts as the chunks
// do, through splits and chunks that empty, built in bulk or not.
func TestMultisetCountsWithManyChunks(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		r := rand.New(rand.NewPCG(1, 2))
		var s Multiset[int64]
		var model []int64
		check := func() {
			require.Greater(t, s.Chunks(), fenFrom, "the Fenwick tree is in use")
			for range 50 {
				v := r.Int64N(4000) - 2000
				less, _ := slices.BinarySearch(model, v)
				require.Equal(t, less, s.Less(v), "Less(%d)", v)
			}
		}
		if bulk {
			s.BeginBulk()
		}
		for range 40_000 {
			v := r.Int64N(4000) - 2000
			i, _ := slices.BinarySearch(model, v)
			model = slices.Insert(model, i, v)
			s.Add(v)
		}
		s.EndBulk()
		check()
		for range 25_000 {
			v := r.Int64N(4000) - 2000
			i, ok := slices.BinarySearch(model, v)
			if ok {
				model = slices.Delete(model, i, i+1)
			}
			require.Equal(t, ok, s.Remove(v))
		}
		// Empty whole chunks: remove a range of values.
		for v := int64(-500); v < 500; v++ {
			for {
				i, ok := slices.BinarySearch(model, v)
				if !ok {
					break
				}
				model = slices.Delete(model, i, i+1)
				require.True(t, s.Remove(v))
			}
		}
		check()
		require.Equal(t, len(model), s.Len())
	}
}

// SortValues sorts 64-bit integers by radix from radixFrom values on:
// the same order as slices.Sort, negatives, duplicates, values that share
// their high bits (the skipped passes) and extremes included.
func TestSortValuesIsSlicesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 3*radixFrom).Draw(t, "n")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		mask := uint64(1)<<rapid.IntRange(1, 64).Draw(t, "bits") - 1 // 64: every bit
		base := rapid.Uint64().Draw(t, "base")
		us := make([]uint64, n)
		for i := range us {
			us[i] = base + r.Uint64()&mask
		}
		if n > 2 {
			us[0], us[1] = 0, math.MaxUint64
		}
		is := make([]int64, n)
		for i, u := range us {
			is[i] = int64(u)
		}
		wantU, wantI := slices.Clone(us), slices.Clone(is)
		slices.Sort(wantU)
		slices.Sort(wantI)
		SortValues(us)
		SortValues(is)
		require.Equal(t, wantU, us)
		require.Equal(t, wantI, is)
	})
	// And a large one, surely past radixFrom: random bits, signs mixed.
	r := rand.New(rand.NewPCG(9, 9))
	big := make([]int64, 50*radixFrom)
	for i := range big {
		big[i] = int64(r.Uint64())
	}
	want := slices.Clone(big)
	slices.Sort(want)
	SortValues(big)
	require.Equal(t, want, big)
}

func BenchmarkSortValues(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	vs := make([]uint64, 1_000_000)
	for i := range vs {
		vs[i] = r.Uint64()
	}
	work := make([]uint64, len(vs))
	b.Run("radix", func(b *testing.B) {
		for range b.N {
			copy(work, vs)
			SortValues(work)
		}
	})
	b.Run("slices.Sort", func(b *testing.B) {
		for range b.N {
			copy(work, vs)
			slices.Sort(work)
		}
	})
}
