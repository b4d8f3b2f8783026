package bench_test

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkPartitionSkew simulates the index partitioned by processor
// across serve instances (docs/scaling.md): processors with record
// counts drawn from a Zipf law (a few processors hold most failures, as
// in a real outage), each processor's records on one instance. It
// reports the largest instance's share of the records, as a multiple of
// the even share 1/k, when processors are placed by a hash of their name
// and when each instance takes the lease of the largest unplaced
// processor while it holds the fewest records (greedy). Each figure is
// the mean over 1 000 draws.
func BenchmarkPartitionSkew(b *testing.B) {
	for _, processors := range []int{20, 100} {
		for _, k := range []int{2, 3, 5} {
			b.Run(fmt.Sprintf("processors=%d/instances=%d", processors, k), func(b *testing.B) {
				var hashed, greedy float64
				const draws = 1000
				for range b.N {
					hashed, greedy = 0, 0
					r := rand.New(rand.NewPCG(uint64(processors), uint64(k)))
					for range draws {
						h, g := skew(r, processors, k)
						hashed += h
						greedy += g
					}
				}
				b.ReportMetric(hashed/draws, "hashed-max/even")
				b.ReportMetric(greedy/draws, "greedy-max/even")
			})
		}
	}
}

// skew draws processor sizes (Zipf, exponent 1.1) and returns the largest
// instance's load over the even share, hashed and greedy.
func skew(r *rand.Rand, processors, k int) (hashed, greedy float64) {
	sizes := make([]float64, processors)
	var total float64
	for i := range sizes {
		sizes[i] = 1 / math.Pow(float64(i+1), 1.1) * (0.5 + r.Float64()) // rank with noise
		total += sizes[i]
	}
	salt := r.Uint64()
	byHash := make([]float64, k)
	for i, s := range sizes {
		h := fnv.New64a()
		fmt.Fprintf(h, "Processor%d-%d", i, salt)
		byHash[h.Sum64()%uint64(k)] += s
	}
	slices.SortFunc(sizes, func(a, b float64) int { return cmp.Compare(b, a) })
	byGreedy := make([]float64, k)
	for _, s := range sizes {
		byGreedy[slices.Index(byGreedy, slices.Min(byGreedy))] += s
	}
	even := total / float64(k)
	return slices.Max(byHash) / even, slices.Max(byGreedy) / even
}
