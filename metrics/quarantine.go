package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/quarantine"
)

// QuarantineCounter is what Quarantine reads. *quarantine.Quarantine
// satisfies it.
type QuarantineCounter interface {
	Counts() []quarantine.Count
}

// Quarantine reports amends_quarantined_total{consumer,reason}: the
// messages each consumer quarantined and terminated since the process
// started, by reason, summed over qs (a projector's and processors'
// quarantines, shared or not), and the invalid KV entries skipped, with
// the bucket as consumer and reason invalid_entry. Every message reason of
// a consumer that quarantined a message is reported, 0 for the ones it
// never met, so dashboards see each series from its consumer's first
// quarantine on; a bucket gets its invalid_entry series.
func Quarantine(qs ...QuarantineCounter) prometheus.Collector {
	d := desc("quarantined_total", "Messages a consumer could never handle, recorded in the quarantine and terminated, by consumer and reason.", "consumer", "reason")
	return &collector{descs: []*prometheus.Desc{d}, read: func() []sample {
		sums := map[string]map[quarantine.Reason]uint64{}
		var consumers []string
		for _, q := range qs {
			for _, c := range q.Counts() {
				if sums[c.Consumer] == nil {
					sums[c.Consumer] = map[quarantine.Reason]uint64{}
					consumers = append(consumers, c.Consumer)
				}
				sums[c.Consumer][c.Reason] += c.N
			}
		}
		var out []sample
		for _, consumer := range consumers {
			kvOnly := len(sums[consumer]) == 1 && sums[consumer][quarantine.ReasonInvalidEntry] > 0
			for _, r := range quarantine.Reasons {
				if (r == quarantine.ReasonInvalidEntry) != kvOnly && sums[consumer][r] == 0 {
					continue // a bucket has no message reasons, a consumer no entry reason
				}
				out = append(out, counter(d, sums[consumer][r], consumer, string(r)))
			}
			for r, n := range sums[consumer] {
				if !knownReason(r) {
					out = append(out, counter(d, n, consumer, string(r)))
				}
			}
		}
		return out
	}}
}

func knownReason(r quarantine.Reason) bool {
	for _, k := range quarantine.Reasons {
		if r == k {
			return true
		}
	}
	return false
}
