package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

// Summarizer is what Records reads. *projection.Index satisfies it.
type Summarizer interface {
	Summary(f api.Filter) (api.Summary, error)
}

// Records reports amends_records{status,recoverable} and
// amends_records_in_view{view}, read from the index at each scrape (one
// pass over the index).
func Records(s Summarizer) prometheus.Collector {
	byStatus := desc("records", "ExecutionFailed records by status and recoverability.", "status", "recoverable")
	byView := desc("records_in_view", "ExecutionFailed records in each operator view.", "view")
	return &collector{descs: []*prometheus.Desc{byStatus, byView}, read: func() []sample {
		sum, err := s.Summary(api.Filter{})
		if err != nil {
			return nil
		}
		var out []sample
		seen := map[[2]string]bool{}
		for _, c := range sum.ByStatus {
			seen[[2]string{string(c.Status), string(c.Recoverable)}] = true
			out = append(out, gauge(byStatus, float64(c.Count), string(c.Status), string(c.Recoverable)))
		}
		// Absent combinations are 0, so that dashboards see them fall to 0.
		for _, st := range aggregate.Statuses {
			for _, r := range aggregate.Recoverabilities {
				if !seen[[2]string{string(st), string(r)}] {
					out = append(out, gauge(byStatus, 0, string(st), string(r)))
				}
			}
		}
		for _, v := range aggregate.Views {
			out = append(out, gauge(byView, float64(sum.Views[v]), string(v)))
		}
		return out
	}}
}

// Projector reports amends_projector_streams_total{result} and
// amends_compensation_events_total{event}: the compensation events this
// instance projected, which is how the control plane sees recordings
// (execution_failed_created), prepares, and replays by result
// (execution_success_applied, execution_failed_applied).
func Projector(p *projection.Projector) prometheus.Collector {
	d := desc("projector_streams_total", "Compensation streams the projector handled, by result.", "result")
	ev := desc("compensation_events_total", "Compensation events projected by this instance, by name: recordings, prepares, replay results and operator changes.", "event")
	return &collector{descs: []*prometheus.Desc{d, ev}, read: func() []sample {
		s := p.Stats()
		out := []sample{
			counter(d, s.Projected, "projected"), counter(d, s.Rebuilt, "rebuilt"), counter(d, s.Skipped, "skipped"),
			counter(d, s.Corrupt, "corrupt"), counter(d, s.Failed, "failed"),
		}
		for _, name := range aggregate.EventNames {
			out = append(out, counter(ev, s.Events[name], name))
		}
		return out
	}}
}
