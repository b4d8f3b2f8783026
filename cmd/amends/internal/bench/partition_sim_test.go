package bench_test

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/amends-dev/amends/partition"
)

// BenchmarkPartitionSkew simulates the index partitioned by processor
// across serve instances (docs/scaling.md): processors with record
// counts drawn from a Zipf law (a few processors hold most failures, as
// in a real outage), each processor's records on one instance. It
// reports the largest instance's share of the records, as a multiple of
// the even share 1/k, when whole processors are placed by a hash of their
// name, when each instance takes the largest unplaced processor while it
// holds the fewest records (greedy), and when partition.Compute places
// them, splitting the processors larger than a quarter of a share; and,
// for partition.Compute, the share of the records that move when one
// more instance joins. Each figure is the mean over 1 000 draws.
func BenchmarkPartitionSkew(b *testing.B) {
	for _, processors := range []int{20, 100} {
		for _, k := range []int{2, 3, 5} {
			b.Run(fmt.Sprintf("processors=%d/instances=%d", processors, k), func(b *testing.B) {
				var hashed, greedy, computed, moved float64
				const draws = 1000
				for range b.N {
					hashed, greedy, computed, moved = 0, 0, 0, 0
					r := rand.New(rand.NewPCG(uint64(processors), uint64(k)))
					for range draws {
						d := skew(b, r, processors, k)
						hashed += d.hashed
						greedy += d.greedy
						computed += d.computed
						moved += d.moved
					}
				}
				b.ReportMetric(hashed/draws, "hashed-max/even")
				b.ReportMetric(greedy/draws, "greedy-max/even")
				b.ReportMetric(computed/draws, "computed-max/even")
				b.ReportMetric(moved/draws, "moved-on-join")
			})
		}
	}
}

// draw is one draw's figures: the largest instance's load over the even
// share, hashed, greedy and computed, and the share of the records that
// move when an instance joins the computed plan.
type draw struct{ hashed, greedy, computed, moved float64 }

// skew draws processor sizes (Zipf, exponent 1.1) and places them.
func skew(b *testing.B, r *rand.Rand, processors, k int) draw {
	sizes := make([]float64, processors)
	counts := make(map[string]uint64, processors)
	var total float64
	for i := range sizes {
		sizes[i] = 1 / math.Pow(float64(i+1), 1.1) * (0.5 + r.Float64()) // rank with noise
		total += sizes[i]
	}
	salt := r.Uint64()
	byHash := make([]float64, k)
	for i, s := range sizes {
		name := fmt.Sprintf("Processor%d-%d", i, salt)
		h := fnv.New64a()
		h.Write([]byte(name))
		byHash[h.Sum64()%uint64(k)] += s
		counts[name] = uint64(s * 1e6)
	}
	slices.SortFunc(sizes, func(a, b float64) int { return cmp.Compare(b, a) })
	byGreedy := make([]float64, k)
	for _, s := range sizes {
		byGreedy[slices.Index(byGreedy, slices.Min(byGreedy))] += s
	}
	even := total / float64(k)
	d := draw{hashed: slices.Max(byHash) / even, greedy: slices.Max(byGreedy) / even}

	instances := make([]string, k+1)
	for i := range instances {
		instances[i] = fmt.Sprint("i", i)
	}
	plan, err := partition.Compute(counts, instances[:k], partition.Plan{})
	if err != nil {
		b.Fatal(err)
	}
	joined, err := partition.Compute(counts, instances, plan)
	if err != nil {
		b.Fatal(err)
	}
	loads := map[string]float64{}
	var all, moved float64
	for proc, n := range counts {
		parts := plan.Parts(proc)
		for i := range parts {
			id := partition.ID(proc, i, parts)
			part := float64(n) / float64(parts)
			loads[plan.Owners[id]] += part
			all += part
		}
		// A part split on the join moves when its new owner is not the
		// old part's.
		now := joined.Parts(proc)
		for i := range now {
			if joined.Owners[partition.ID(proc, i, now)] != plan.Owners[partition.ID(proc, i%parts, parts)] {
				moved += float64(n) / float64(now)
			}
		}
	}
	var most float64
	for _, l := range loads {
		most = max(most, l)
	}
	d.computed = most / (all / float64(k))
	d.moved = moved / all
	return d
}
