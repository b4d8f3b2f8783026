package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "amends",
		Subsystem: "http",
		Name:      "request_duration_seconds",
		Help:      "Duration of HTTP requests by route and status code.",
		Buckets:   []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"method", "route", "code"})}
	reg.MustRegister(m.duration)
	return m
}

func (m *httpMetrics) observe(method, route, code string, d time.Duration) {
	m.duration.WithLabelValues(method, route, code).Observe(d.Seconds())
}
