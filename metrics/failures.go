package metrics

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/recorder"
)

// MaxFunctions caps the function label of the metrics by function: the
// functions past it (the youngest, or the fewest) are reported together
// under recorder.OtherFunctions, so a service with many functions cannot
// blow up the number of series.
const MaxFunctions = recorder.MaxFinalFailureFunctions

// Failures reports, read from the index at each scrape, for alerting:
//
//   - amends_oldest_open_failure_age_seconds{function}: for each function
//     ("Processor.Name") with records not SUCCEEDED, how long ago the
//     oldest of them last failed (the index's OldestFailureAt);
//   - amends_open_final_failures{function}: FAILED records of the function
//     with no automatic retry left (retries exhausted or UNRECOVERABLE),
//     which only an operator moves on.
//
// Functions of the same name in several contexts are reported together.
// now is the clock (time.Now if nil).
func Failures(s Summarizer, now func() time.Time) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	age := desc("oldest_open_failure_age_seconds", "Seconds since the oldest unfinished record of each function last failed.", "function")
	final := desc("open_final_failures", "FAILED records of each function with no automatic retry left (retries exhausted or UNRECOVERABLE).", "function")
	return &collector{descs: []*prometheus.Desc{age, final}, read: func() []sample {
		all, err := s.Summary(api.Filter{})
		if err != nil {
			return nil
		}
		failed, err := s.Summary(api.Filter{Status: aggregate.StatusFailed})
		if err != nil {
			return nil
		}
		unrec, err := s.Summary(api.Filter{Status: aggregate.StatusFailed, Recoverable: aggregate.Unrecoverable})
		if err != nil {
			return nil
		}
		oldest := map[string]int64{}
		for _, g := range all.Groups {
			if g.OldestFailureAt == 0 {
				continue
			}
			k := functionLabel(g)
			if o, ok := oldest[k]; !ok || g.OldestFailureAt < o {
				oldest[k] = g.OldestFailureAt
			}
		}
		finals := map[string]float64{}
		for _, g := range failed.Groups {
			finals[functionLabel(g)] += float64(g.Exhausted)
		}
		for _, g := range unrec.Groups {
			finals[functionLabel(g)] += float64(g.Retryable) // UNRECOVERABLE with retries left; the exhausted are counted above
		}
		ms := now().UnixMilli()
		ages := map[string]float64{}
		for k, at := range oldest {
			ages[k] = max(float64(ms-at)/1000, 0)
		}
		var out []sample
		for k, v := range capped(ages, maxOf) {
			out = append(out, gauge(age, v, k))
		}
		for k, v := range capped(finals, sumOf) {
			out = append(out, gauge(final, v, k))
		}
		return out
	}}
}

func functionLabel(g api.FailureGroup) string { return g.Processor + "." + g.Function }

func maxOf(a, b float64) float64 { return max(a, b) }
func sumOf(a, b float64) float64 { return a + b }

// capped keeps the MaxFunctions largest values and merges the others
// into recorder.OtherFunctions with merge.
func capped(m map[string]float64, merge func(a, b float64) float64) map[string]float64 {
	if len(m) <= MaxFunctions {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	out := make(map[string]float64, MaxFunctions+1)
	for i, k := range keys {
		if i < MaxFunctions {
			out[k] = m[k]
			continue
		}
		if o, ok := out[recorder.OtherFunctions]; ok {
			out[recorder.OtherFunctions] = merge(o, m[k])
		} else {
			out[recorder.OtherFunctions] = m[k]
		}
	}
	return out
}
