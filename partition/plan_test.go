package partition_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/partition"
)

// input draws records per processor (uniform, or Zipf as an outage's
// are) and instance names.
func input(t *rapid.T, label string) (map[string]uint64, []string) {
	n := rapid.IntRange(0, 120).Draw(t, label+" processors")
	zipf := rapid.Bool().Draw(t, label+" zipf")
	sizes := make(map[string]uint64, n)
	for i := range n {
		if zipf {
			scale := rapid.Float64Range(1, 1e7).Draw(t, label+" scale")
			sizes[fmt.Sprintf("P%d", i)] = uint64(scale / math.Pow(float64(i+1), 1.1))
		} else {
			sizes[fmt.Sprintf("P%d", i)] = rapid.Uint64Range(0, 1e7).Draw(t, label+" size")
		}
	}
	k := rapid.IntRange(1, partition.MaxInstances).Draw(t, label+" instances")
	first := rapid.IntRange(0, 100).Draw(t, label+" first instance")
	instances := make([]string, k)
	for i := range instances {
		instances[i] = fmt.Sprintf("i%d", first+i)
	}
	return sizes, instances
}

// prevPlan draws the plan in force: none, or one computed for other sizes
// and instances.
func prevPlan(t *rapid.T) partition.Plan {
	if rapid.Bool().Draw(t, "no plan yet") {
		return partition.Plan{}
	}
	sizes, instances := input(t, "before")
	p, err := partition.Compute(sizes, instances, partition.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loads checks that plan places every part of every processor of sizes on
// one of instances, and nothing else, and returns each instance's records.
func loads(t *rapid.T, plan partition.Plan, sizes map[string]uint64, instances []string) map[string]float64 {
	out := map[string]float64{}
	want := 0
	for proc, size := range sizes {
		n := plan.Parts(proc)
		if n&(n-1) != 0 || n > partition.Slots {
			t.Fatalf("%s has %d parts: not a power of two up to %d", proc, n, partition.Slots)
		}
		for i := range n {
			owner, ok := plan.Owners[partition.ID(proc, i, n)]
			if !ok || !slices.Contains(instances, owner) {
				t.Fatalf("part %d of %d of %s has owner %q, not one of the instances", i, n, proc, owner)
			}
			out[owner] += float64(size) / float64(n)
		}
		want += n
	}
	if len(plan.Owners) != want {
		t.Fatalf("the plan owns %d partitions, the processors have %d", len(plan.Owners), want)
	}
	return out
}

// Whatever the sizes, the instances and the plan before, every record has
// one partition, every partition one live instance, and every instance
// holds between half and 1.25 times its share.
func TestComputeKeepsEveryInstanceNearItsShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prev := prevPlan(t)
		sizes, instances := input(t, "now")
		plan, err := partition.Compute(sizes, instances, prev)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Validate(); err != nil {
			t.Fatalf("a computed plan does not validate: %v", err)
		}
		var total float64
		for _, s := range sizes {
			total += float64(s)
		}
		share := total / float64(len(instances))
		got := loads(t, plan, sizes, instances)
		for _, in := range instances {
			if l := got[in]; l > 1.25*share*(1+1e-9) || l < 0.5*share*(1-1e-9) {
				t.Fatalf("instance %s holds %.0f records, %.3f times its share of %.0f", in, l, l/share, share)
			}
		}
		for proc := range sizes {
			id := rapid.StringN(1, 40, -1).Draw(t, "record id")
			part := plan.Of(proc, id)
			if _, ok := plan.Owners[part]; !ok {
				t.Fatalf("record %q of %s is in partition %q, which the plan does not place", id, proc, part)
			}
			p, slots, ok := plan.SlotsOf(part)
			if !ok || p != proc || !slices.Contains(slots, partition.Slot(id)) {
				t.Fatalf("partition %q's slots %v do not hold record %q's slot %d", part, slots, id, partition.Slot(id))
			}
		}
	})
}

// A plan computed again from its own sizes and instances moves nothing.
func TestComputeOnItsOwnPlanMovesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sizes, instances := input(t, "now")
		plan, err := partition.Compute(sizes, instances, prevPlan(t))
		if err != nil {
			t.Fatal(err)
		}
		again, err := partition.Compute(sizes, instances, plan)
		if err != nil {
			t.Fatal(err)
		}
		if !assert.Equal(t, plan, again) {
			t.Fatal("the plan changed")
		}
	})
}

// When an instance joins, it takes its part from the others: at least
// half its share. (How many records move is measured, not bounded here:
// BenchmarkPartitionSkew's moved-on-join.)
func TestAnInstanceJoiningTakesItsPartFromTheOthers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sizes, _ := input(t, "now")
		k := rapid.IntRange(1, partition.MaxInstances-1).Draw(t, "instances")
		instances := make([]string, k+1)
		for i := range instances {
			instances[i] = fmt.Sprintf("i%d", i)
		}
		plan, err := partition.Compute(sizes, instances[:k], partition.Plan{})
		if err != nil {
			t.Fatal(err)
		}
		after, err := partition.Compute(sizes, instances, plan)
		if err != nil {
			t.Fatal(err)
		}
		var total float64
		for _, size := range sizes {
			total += float64(size)
		}
		share := total / float64(k+1)
		joiner := loads(t, after, sizes, instances)[instances[k]]
		if joiner < 0.5*share*(1-1e-9) {
			t.Fatalf("the joiner holds %.0f records, %.3f of its share", joiner, joiner/share)
		}
	})
}

// A split regroups slots: a record of part i of n is in a part j of 2n
// with j % n == i, so each part divides in two and a record's slot, which
// its view's key carries, never changes.
func TestASplitDividesEachPartInTwo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := 1 << rapid.IntRange(0, 7).Draw(t, "log2 parts")
		id := rapid.String().Draw(t, "record id")
		slot := partition.Slot(id)
		if slot < 0 || slot >= partition.Slots || partition.Slot(id) != slot {
			t.Fatalf("slot %d of %q", slot, id)
		}
		before := partition.Plan{Splits: map[string]int{"P": n}}
		after := partition.Plan{Splits: map[string]int{"P": 2 * n}}
		_, was, _ := before.SlotsOf(before.Of("P", id))
		_, now, _ := after.SlotsOf(after.Of("P", id))
		if !slices.Contains(was, slot) || !slices.Contains(now, slot) {
			t.Fatalf("record %q's slot %d is in neither %v nor %v", id, slot, was, now)
		}
		for _, s := range now {
			if !slices.Contains(was, s) {
				t.Fatalf("part of %d parts %v is not within the part of %d parts %v", 2*n, now, n, was)
			}
		}
	})
}

// The parts of a processor hold every slot once.
func TestThePartsOfAProcessorHoldEverySlotOnce(t *testing.T) {
	for _, n := range []int{1, 2, 8, partition.Slots} {
		p := partition.Plan{Splits: map[string]int{"P": n}}
		var all []int
		for i := range n {
			proc, slots, ok := p.SlotsOf(partition.ID("P", i, n))
			require.True(t, ok)
			assert.Equal(t, "P", proc)
			all = append(all, slots...)
		}
		slices.Sort(all)
		require.Len(t, all, partition.Slots, "%d parts", n)
		for s, got := range all {
			require.Equal(t, s, got, "%d parts: slot %d once", n, s)
		}
	}
	p := partition.Plan{Splits: map[string]int{"P": 4}}
	for _, id := range []string{"P", "P/4/4", "P/1/2", "P/1/8", "P/-1/4", "P/x/4", "Q/1/4", "P/01/4", "P/1"} {
		_, _, ok := p.SlotsOf(id)
		assert.False(t, ok, "%q is no partition of the plan", id)
	}
}

// Input that cannot be planned is refused with an error naming it.
func TestComputeRefusesWhatCannotBePlanned(t *testing.T) {
	many := make([]string, partition.MaxInstances+1)
	for i := range many {
		many[i] = fmt.Sprint("i", i)
	}
	for name, c := range map[string]struct {
		sizes     map[string]uint64
		instances []string
		want      string
	}{
		"no instance":          {map[string]uint64{"P": 1}, nil, "no instance"},
		"too many instances":   {nil, many, "over the limit of 64"},
		"an empty instance":    {nil, []string{"a", ""}, `instance name ""`},
		"an instance twice":    {nil, []string{"a", "a"}, `"a" is named twice`},
		"an empty processor":   {map[string]uint64{"": 1}, []string{"a"}, `processor name ""`},
		"a processor with '/'": {map[string]uint64{"P/1": 1}, []string{"a"}, `processor name "P/1"`},
	} {
		_, err := partition.Compute(c.sizes, c.instances, partition.Plan{})
		require.ErrorIs(t, err, partition.ErrInvalid, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

// A plan read from storage that Compute could not have made is refused,
// with the partition or processor at fault named.
func TestValidateRefusesWhatComputeCannotMake(t *testing.T) {
	good := partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P/0/2": "a", "P/1/2": "b", "Q": "a"}}
	require.NoError(t, good.Validate())
	require.NoError(t, partition.Plan{}.Validate(), "the zero plan places nothing")
	for name, c := range map[string]struct {
		plan partition.Plan
		want string
	}{
		"a split of 3":           {partition.Plan{Splits: map[string]int{"P": 3}}, `"P" has 3 parts`},
		"a split of 1":           {partition.Plan{Splits: map[string]int{"P": 1}}, `"P" has 1 parts`},
		"a split past the slots": {partition.Plan{Splits: map[string]int{"P": 2 * partition.Slots}}, "power of two from 2 to 256"},
		"a split of no name":     {partition.Plan{Splits: map[string]int{"": 2}}, `processor name ""`},
		"a part past the split":  {partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P/0/2": "a", "P/1/2": "a", "P/2/2": "a"}}, `"P/2/2"`},
		"a part of no split":     {partition.Plan{Owners: map[string]string{"P/0/2": "a"}}, `"P/0/2"`},
		"a missing part":         {partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P/0/2": "a"}}, `1 of processor "P"'s 2 parts`},
		"no owner":               {partition.Plan{Owners: map[string]string{"P": ""}}, `partition "P" has owner ""`},
		"a whole split one":      {partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P": "a"}}, `"P" is not a partition`},
		"a leading zero":         {partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P/00/2": "a", "P/1/2": "a"}}, `"P/00/2"`},
		"another split's part":   {partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P/0/4": "a", "P/1/2": "a"}}, `"P/0/4"`},
	} {
		err := c.plan.Validate()
		require.ErrorIs(t, err, partition.ErrInvalid, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

// Three processors on two instances, whose share is 500 records: Mailer
// and Billing are more than a quarter of it (125), so they are split into
// parts of 75; the least loaded instance takes each part in turn, and the
// two end with 475 and 525 records.
func ExampleCompute() {
	sizes := map[string]uint64{"Mailer": 600, "Billing": 300, "Audit": 100}
	plan, err := partition.Compute(sizes, []string{"a", "b"}, partition.Plan{})
	if err != nil {
		panic(err)
	}
	fmt.Println("parts:", plan.Parts("Mailer"), plan.Parts("Billing"), plan.Parts("Audit"))
	fmt.Println("a holds", plan.Held("a"))
	fmt.Println("b holds", plan.Held("b"))
	fmt.Println("record r-1 of Mailer is in", plan.Of("Mailer", "r-1"))
	// Output:
	// parts: 8 4 1
	// a holds [Audit Billing/2/4 Mailer/0/8 Mailer/2/8 Mailer/4/8 Mailer/6/8]
	// b holds [Billing/0/4 Billing/1/4 Billing/3/4 Mailer/1/8 Mailer/3/8 Mailer/5/8 Mailer/7/8]
	// record r-1 of Mailer is in Mailer/3/8
}

func TestCheckIDTakesWhatIDMakes(t *testing.T) {
	for _, id := range []string{"P", "P/0/2", "P/255/256", partition.ID("Mailer", 3, 8)} {
		require.NoError(t, partition.CheckID(id), id)
	}
	for id, want := range map[string]string{
		"":        `processor name ""`,
		"/1/2":    `processor name ""`,
		"P/":      "/<i>/<n>",
		"P/1":     "/<i>/<n>",
		"P/0/1":   "/<i>/<n>",
		"P/0/3":   "/<i>/<n>",
		"P/0/512": "/<i>/<n>",
		"P/2/2":   "/<i>/<n>",
		"P/-1/2":  "/<i>/<n>",
		"P/01/2":  "/<i>/<n>",
		"P/1/02":  "/<i>/<n>",
		"P/1/2/2": "/<i>/<n>",
		"P/x/2":   "/<i>/<n>",
		"P/+1/2":  "/<i>/<n>",
	} {
		err := partition.CheckID(id)
		require.ErrorIs(t, err, partition.ErrInvalid, id)
		assert.Contains(t, err.Error(), want, id)
	}
}

// An id's slots are those its plan gives it; two ids overlap exactly when
// their slots meet.
func TestOverlapIsASharedSlot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := func(label string) string {
			proc := rapid.SampledFrom([]string{"P", "Q"}).Draw(t, label+" processor")
			n := 1 << rapid.IntRange(0, 8).Draw(t, label+" log2 parts")
			return partition.ID(proc, rapid.IntRange(0, n-1).Draw(t, label+" part"), n)
		}
		a, b := id("a"), id("b")
		pa, sa, err := partition.SlotsOfID(a)
		require.NoError(t, err)
		pb, sb, err := partition.SlotsOfID(b)
		require.NoError(t, err)
		meet := pa == pb && slices.ContainsFunc(sa, func(s int) bool { return slices.Contains(sb, s) })
		require.Equal(t, meet, partition.Overlap(a, b), "%s and %s", a, b)
		rec := rapid.StringN(1, 20, -1).Draw(t, "record")
		require.Equal(t, pa == "P" && slices.Contains(sa, partition.Slot(rec)), partition.Holds(a, "P", rec), "%s holds %s", a, rec)
		require.True(t, partition.Overlap(a, a))
	})
	_, _, err := partition.SlotsOfID("P/3")
	require.ErrorIs(t, err, partition.ErrInvalid)
	assert.False(t, partition.Overlap("P/3", "P"), "not an id")
}

// Slot is FNV-1a of the id; a Set answers for a record as Holds does for
// each of its partitions, and leaves out what is no partition's id.
func TestASetAnswersAsItsPartitions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rec := rapid.StringN(0, 40, -1).Draw(t, "record")
		h := fnv.New32a()
		_, _ = h.Write([]byte(rec))
		require.Equal(t, int(h.Sum32()%partition.Slots), partition.Slot(rec))

		n := 1 << rapid.IntRange(0, 8).Draw(t, "log2 parts")
		ids := []string{"not/a/partition"}
		for i := range n {
			if rapid.Bool().Draw(t, fmt.Sprint("hold ", i)) {
				ids = append(ids, partition.ID("P", i, n))
			}
		}
		set := partition.NewSet(ids)
		require.NotContains(t, set.IDs(), "not/a/partition")
		want := ""
		for _, id := range ids {
			if partition.Holds(id, "P", rec) {
				want = id
			}
		}
		got, ok := set.Of("P", rec)
		require.Equal(t, want, got)
		require.Equal(t, want != "", ok)
		_, ok = set.Of("Q", rec)
		require.False(t, ok)
		// The lead is the part of slot 0, the first, if held.
		lead, ok := set.Lead("P")
		require.Equal(t, slices.Contains(ids, partition.ID("P", 0, n)), ok)
		if ok {
			require.Equal(t, partition.ID("P", 0, n), lead)
		}
		_, ok = set.Lead("Q")
		require.False(t, ok)
	})
}
