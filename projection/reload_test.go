package projection_test

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/testlog"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/projection"
)

// When its partitions change, an index keeps the records of the
// partitions it still holds, drops the others and reads those of its new
// partitions: whichever load it makes, it then holds exactly the records
// of its partitions. A record that moved, before the change, from a
// partition new to the index to one it already held stays: the reload
// reads the deletion of its old key, not its view at the new one, which
// the index already holds.
func TestAReloadHoldsTheRecordsOfTheNewPartitions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		above   uint64 // the keys above which the load is filtered
		skipped int    // the changes the reload reads and skips
	}{
		// Kept's 4 views, the moved one's at Kept and Gone's 4 views.
		{name: "every key loaded", above: 1 << 40, skipped: 9},
		// Added's keys are read alone (readUnrestored), and the watch
		// follows from the revision the index held: none is skipped.
		{name: "the partitions' keys loaded", above: 0, skipped: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			run(t, e.projector(t))
			ids := map[string][]string{}
			for i := range 12 {
				fn := fnA
				fn.ProcessorName = []string{"Kept", "Added", "Gone"}[i%3]
				ids[fn.ProcessorName] = append(ids[fn.ProcessorName], e.create(t, evt(i), fn, "Timeout", nil))
				e.waitViews(t, map[string]uint64{ids[fn.ProcessorName][len(ids[fn.ProcessorName])-1]: 1})
			}
			src := newHeldSource([]string{"Kept", "Gone"})
			logs := &testlog.Buffer{}
			ix := e.index(t, projection.WithPartitions(src), projection.LoadFilteredAbove(tc.above),
				projection.WithIndexLogger(slog.New(slog.NewTextHandler(logs, nil))))
			run(t, ix)
			holds := func(what string, want ...[]string) {
				t.Helper()
				all := slices.Sorted(slices.Values(slices.Concat(want...)))
				testwait.For(t, what, func() bool {
					_, claimed := ix.Partitions()
					return claimed && slices.Equal(listIDs(t, ix), all)
				})
			}
			holds("the records of Kept and Gone", ids["Kept"], ids["Gone"])

			// A record of Added moves to Kept: its key of Added is deleted.
			moved := ids["Added"][0]
			fn := fnA
			fn.ProcessorName = "Kept"
			r, err := e.svc.Execute(t.Context(), moved, aggregate.ChangeFunction(fn), aggregate.Meta{Actor: "test"})
			require.NoError(t, err)
			e.waitViews(t, map[string]uint64{moved: r.Version})
			holds("the moved record with Kept's", ids["Kept"], ids["Gone"], []string{moved})

			src.set([]string{"Kept", "Added"})
			holds("the records of Kept and Added, the moved one once", ids["Kept"], ids["Added"])
			// It read the history of Added's keys alone, and dropped Gone's.
			require.Contains(t, logs.String(), fmt.Sprintf(`msg="index: loaded the partitions this instance now holds" dropped=4 skipped=%d `, tc.skipped))
			held, _ := ix.Sizes()
			require.Equal(t, map[string]uint64{"Kept": uint64(len(ids["Kept"]) + 1), "Added": uint64(len(ids["Added"]) - 1)}, held)

			// The watch follows the new partitions.
			fn.ProcessorName = "Added"
			late := e.create(t, evt(100), fn, "Timeout", nil)
			holds("a new record of Added", ids["Kept"], ids["Added"], []string{late})
		})
	}
}
