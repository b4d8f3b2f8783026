package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func registry(t *testing.T, cs ...prometheus.Collector) *prometheus.Registry {
	t.Helper()
	r := prometheus.NewRegistry()
	r.MustRegister(cs...)
	return r
}

// filterMetric returns the collector's amends_scheduler_prepares_total
// sample with result label value.
func filterMetric(t *testing.T, c prometheus.Collector, result string) prometheus.Collector {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "result" && l.GetValue() == result && pb.GetCounter() != nil {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, func() float64 { return pb.GetCounter().GetValue() })
			}
		}
	}
	t.Fatalf("no sample with result %q", result)
	return nil
}
