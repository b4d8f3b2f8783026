package metrics

import (
	"github.com/amends-dev/amends/retention"
	"github.com/prometheus/client_golang/prometheus"
)

// Retention reports the retention sweeper's counters (amends_retention_*):
// records removed by kind, stream messages purged, views deleted, records
// archived, and passes by outcome.
func Retention(sw *retention.Sweeper) prometheus.Collector {
	return retentionCollector(sw.Stats)
}

func retentionCollector(stats func() retention.Stats) prometheus.Collector {
	removed := desc("retention_removed_total", "Finished records retention removed, by kind (succeeded, unrecoverable).", "kind")
	messages := desc("retention_messages_total", "Compensation stream messages retention purged.")
	views := desc("retention_views_total", "Views retention deleted.")
	archived := desc("retention_archived_total", "Removed records whose history was archived first.")
	passes := desc("retention_passes_total", "Retention passes of this instance, by outcome (ok, failed, halted: the stored progress is invalid).", "outcome")
	last := desc("retention_last_batch_timestamp_seconds", "When the last retention batch ended; 0 if none did.")
	return &collector{descs: []*prometheus.Desc{removed, messages, views, archived, passes, last}, read: func() []sample {
		s := stats()
		at := 0.0
		if !s.LastAt.IsZero() {
			at = float64(s.LastAt.UnixMilli()) / 1000
		}
		return []sample{
			counter(removed, s.Succeeded, "succeeded"), counter(removed, s.Unrecoverable, "unrecoverable"),
			counter(messages, s.Messages), counter(views, s.Views), counter(archived, s.Archived),
			counter(passes, s.Passes-s.Failed-s.Halted, "ok"), counter(passes, s.Failed, "failed"), counter(passes, s.Halted, "halted"),
			gauge(last, at),
		}
	}}
}
