package chunked

import (
	"cmp"
	"slices"
)

// radixFrom is the fewest values SortValues sorts by radix: below it the
// counts' tables cost more than a comparison sort.
const radixFrom = 1 << 12

// SortValues sorts vs ascending: 64-bit integers by an LSD radix sort,
// about three times faster than slices.Sort at a million values (a bulk
// load sorts several such sets), anything else with slices.Sort.
func SortValues[T cmp.Ordered](vs []T) {
	if len(vs) >= radixFrom {
		switch s := any(vs).(type) {
		case []uint64:
			radixSort(s, 0)
			return
		case []int64:
			radixSort(s, 1<<63) // the sign bit flipped, int64s order as uint64s
			return
		}
	}
	slices.Sort(vs)
}

// radixSort sorts vs by the bits of v^flip, 16 at a time, through a
// scratch slice of the same length; a pass whose digit is the same for
// every value is skipped (timestamps share their high bits).
func radixSort[S ~[]E, E int64 | uint64](vs S, flip uint64) {
	const bits, buckets = 16, 1 << 16
	tmp := make(S, len(vs))
	src, dst := vs, tmp
	var count [buckets]int
	for shift := uint(0); shift < 64; shift += bits {
		clear(count[:])
		for _, v := range src {
			count[(uint64(v)^flip)>>shift&(buckets-1)]++
		}
		if count[(uint64(src[0])^flip)>>shift&(buckets-1)] == len(src) {
			continue // every value has this digit: the order stands
		}
		pos := 0
		for d, n := range count {
			count[d] = pos
			pos += n
		}
		for _, v := range src {
			d := (uint64(v) ^ flip) >> shift & (buckets - 1)
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &vs[0] {
		copy(vs, src)
	}
}
