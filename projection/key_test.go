package projection_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection"
)

// kvKey is what JetStream accepts as a KV key.
var kvKey = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

func FuzzKeyRoundTrip(f *testing.F) {
	for _, s := range []string{"0ea40363-d017-46b7-8da9-1f890bb5c2f9", "a.b", "=x", "ünï cödé", ">", "*", "~", "a b"} {
		f.Add("Mailer", s)
		f.Add(s, "0ea40363-d017-46b7-8da9-1f890bb5c2f9")
	}
	f.Fuzz(func(t *testing.T, processor, id string) {
		key, err := projection.ViewKey(processor, id)
		if projection.CheckID(id) != nil || processor == "" {
			require.ErrorIs(t, err, projection.ErrInvalidQuery)
			return
		}
		require.NoError(t, err)
		require.Regexp(t, kvKey, key, "a valid KV key")
		require.Equal(t, 3, strings.Count(key, "."), "four tokens: processor, two slot digits, record id")
		proc, back, err := projection.ParseKey(key)
		require.NoError(t, err)
		require.Equal(t, id, back)
		require.Equal(t, processor, proc)
	})
}

func TestViewKeyRefusesWhatCannotBeARecordID(t *testing.T) {
	long := strings.Repeat("x", eventstore.MaxIDLength)
	for name, id := range map[string]string{
		"empty": "", "over 256 bytes": long + "x", "4000 characters": strings.Repeat("a", 4000),
		"not UTF-8": "a\xffb", "control character": "a\nb", "DEL": "a\x7f",
	} {
		_, err := projection.ViewKey("Mailer", id)
		require.ErrorIs(t, err, projection.ErrInvalidQuery, name)
	}
	_, err := projection.ViewKey("", "r-1")
	require.ErrorIs(t, err, projection.ErrInvalidQuery, "an empty processor")
	key, err := projection.ViewKey("Mailer", long)
	require.NoError(t, err, "256 bytes is the limit, not over it")
	require.Regexp(t, kvKey, key)
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", "P.0.0.=YS5i", "P.1.2.x", "=", "P.0.0.=YWJj", "a.b", "", "Mailer.3.a.r-1", "M.3.a.r-1.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		proc, id, err := projection.ParseKey(key)
		if err != nil {
			require.ErrorIs(t, err, projection.ErrCorruptView)
			return
		}
		again, err := projection.ViewKey(proc, id)
		require.NoError(t, err)
		require.Equal(t, key, again, "only canonical keys parse")
	})
}

// matches reports whether the KV key pattern p matches key.
func matches(p, key string) bool {
	pt, kt := strings.Split(p, "."), strings.Split(key, ".")
	for i, tok := range pt {
		switch {
		case tok == ">":
			return len(kt) > i
		case i >= len(kt):
			return false
		case tok != "*" && tok != kt[i]:
			return false
		}
	}
	return len(pt) == len(kt)
}

// A watch of some partitions' filters reads exactly their views, with
// never more than 8 patterns a part and no two that overlap.
func TestKeyFiltersMatchThePartitionsViewsAndNoOther(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		procs := []string{"Mailer", "a.b", "Order-Projector", "ünï"}
		var held []string
		for _, proc := range procs {
			switch n := rapid.SampledFrom([]int{0, 1, 2, 4, 16, 32, 256}).Draw(t, "n-"+proc); n {
			case 0:
			case 1:
				held = append(held, proc)
			default:
				i := rapid.IntRange(0, n-1).Draw(t, "i-"+proc)
				held = append(held, partition.ID(proc, i, n))
				if n <= 32 && rapid.Bool().Draw(t, "two-"+proc) {
					held = append(held, partition.ID(proc, (i+1)%n, n))
				}
			}
		}
		filters := projection.KeyFilters(held)
		set := partition.NewSet(held)
		for k := range 200 {
			proc := rapid.SampledFrom(append(procs, "Other")).Draw(t, fmt.Sprintf("proc-%d", k))
			id := rapid.StringMatching(`[a-z0-9.=-]{1,12}`).Draw(t, fmt.Sprintf("id-%d", k))
			key, err := projection.ViewKey(proc, id)
			if err != nil {
				t.Fatal(err)
			}
			_, want := set.Of(proc, id)
			got := false
			for _, f := range filters {
				got = got || matches(f, key)
			}
			if got != want {
				t.Fatalf("key %s of processor %q: matched %v, held %v (partitions %v, filters %v)", key, proc, got, want, held, filters)
			}
		}
	})
	for _, n := range []int{2, 4, 8, 16, 32, 64, 128, 256} {
		for i := range n {
			filters := projection.KeyFilters([]string{partition.ID("Mailer", i, n)})
			require.LessOrEqual(t, len(filters), 8, "part %d of %d: at most 8 patterns", i, n)
		}
	}
	require.Equal(t, []string{"Mailer.>"}, projection.KeyFilters([]string{"Mailer"}))
	require.Equal(t, []string{"Mailer.>"}, projection.KeyFilters([]string{"Mailer/1/2", "Mailer", "Mailer/3/32"}), "what a whole processor covers is left out")
	require.Equal(t, []string{"Mailer.3.>"}, projection.KeyFilters([]string{"Mailer/3/16", "Mailer/3/32", "Mailer/3/16"}), "repeats and covered parts are left out")
}
