package notify

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Delivery outcomes, the "outcome" label of amends_notify_deliveries_total.
const (
	OutcomeDelivered = "delivered" // the endpoint answered a success status
	OutcomeFailed    = "failed"    // the retry limit was reached; the failure was recorded
	OutcomeRefused   = "refused"   // the SSRF guard refused the destination
	OutcomeDuplicate = "duplicate" // dropped by dedup
)

// Metrics are the notifier's Prometheus metrics. Register it with a
// registry (it is a prometheus.Collector). Safe for concurrent use.
type Metrics struct {
	deliveries *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	lag        prometheus.Histogram
	retries    *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	refused    prometheus.Counter
	recorded   prometheus.Counter
}

func newMetrics() *Metrics {
	return &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amends_notify_deliveries_total",
			Help: "Notification deliveries by endpoint and outcome (delivered, failed, refused)."}, []string{"endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amends_notify_request_seconds",
			Help: "Duration of one notification request, by endpoint.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"endpoint"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "amends_notify_lag_seconds",
			Help: "Time from the record event to its delivery.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amends_notify_retries_total",
			Help: "Notification requests retried after a failure, by endpoint."}, []string{"endpoint"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amends_notify_dropped_duplicates_total",
			Help: "Notifications dropped by dedup, by endpoint."}, []string{"endpoint"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "amends_notify_ssrf_refused_total",
			Help: "Destinations the SSRF guard refused."}),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{Name: "amends_notify_failures_recorded_total",
			Help: "Deliveries that failed after the retry limit and were recorded as ExecutionFailed records."}),
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.deliveries, m.latency, m.lag, m.retries, m.dropped, m.refused, m.recorded}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}
