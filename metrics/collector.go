package metrics

import "github.com/prometheus/client_golang/prometheus"

// sample is one metric value with its label values.
type sample struct {
	desc   *prometheus.Desc
	kind   prometheus.ValueType
	value  float64
	labels []string
}

// collector turns a function that reads samples into a Collector.
type collector struct {
	descs []*prometheus.Desc
	read  func() []sample
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.read() {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value, s.labels...)
	}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("amends_"+name, help, labels, nil)
}

func counter(d *prometheus.Desc, v uint64, labels ...string) sample {
	return sample{desc: d, kind: prometheus.CounterValue, value: float64(v), labels: labels}
}

func gauge(d *prometheus.Desc, v float64, labels ...string) sample {
	return sample{desc: d, kind: prometheus.GaugeValue, value: v, labels: labels}
}
