package projection

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The chunk set keeps its values in order through builds, inserts and
// removes that split and empty chunks, and walks like a sorted slice.
func TestChunkSetIsASortedSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s chunkSet[int, byValue[int]]
		var model []int
		if rapid.Bool().Draw(t, "build") {
			model = rapid.SliceOfNDistinct(rapid.IntRange(-3000, 3000), 0, 3000, rapid.ID).Draw(t, "built")
			slices.Sort(model)
			s.build(slices.Clone(model))
		}
		for range rapid.IntRange(0, 2000).Draw(t, "ops") {
			v := rapid.IntRange(-3000, 3000).Draw(t, "v")
			i, ok := slices.BinarySearch(model, v)
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				removed, _, _ := s.remove(v)
				require.Equal(t, ok, removed)
				if ok {
					model = slices.Delete(model, i, i+1)
				}
			case 1:
				got := s.popWhile(func(x int) bool { return x <= v })
				k, _ := slices.BinarySearch(model, v+1)
				require.Equal(t, append([]int{}, model[:k]...), append([]int{}, got...))
				model = model[k:]
			default:
				if !ok {
					s.insert(v)
					model = slices.Insert(model, i, v)
				}
			}
		}
		require.Equal(t, len(model), s.n)
		var all, desc []int
		s.each(func(x int) bool { all = append(all, x); return true })
		s.eachDesc(func(x int) bool { desc = append(desc, x); return true })
		require.Equal(t, append([]int{}, model...), append([]int{}, all...))
		slices.Reverse(desc)
		require.Equal(t, append([]int{}, model...), append([]int{}, desc...))
		if len(model) > 0 {
			require.Equal(t, model[0], s.first())
			require.Equal(t, model[len(model)-1], s.last())
		}
		for range 20 {
			v := rapid.IntRange(-3002, 3002).Draw(t, "q")
			less, found := slices.BinarySearch(model, v)
			var from, below, before, atMost []int
			s.from(v, func(x int) bool { from = append(from, x); return true })
			s.below(v, func(x int) bool { below = append(below, x); return true })
			s.before(v, false, func(x int) bool { before = append(before, x); return true })
			s.before(v, true, func(x int) bool { atMost = append(atMost, x); return true })
			require.Equal(t, append([]int{}, model[less:]...), append([]int{}, from...), "from(%d)", v)
			require.Equal(t, append([]int{}, model[:less]...), append([]int{}, below...), "below(%d)", v)
			slices.Reverse(before)
			require.Equal(t, append([]int{}, model[:less]...), append([]int{}, before...), "before(%d)", v)
			upTo := less
			if found {
				upTo++
			}
			slices.Reverse(atMost)
			require.Equal(t, append([]int{}, model[:upTo]...), append([]int{}, atMost...), "before(%d, orEqual)", v)
		}
	})
}
