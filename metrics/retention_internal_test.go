package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/amends-dev/amends/retention"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestRetentionCollector(t *testing.T) {
	c := retentionCollector(func() retention.Stats {
		return retention.Stats{Passes: 10, Batches: 4, Succeeded: 1900, Unrecoverable: 100, Messages: 6100, Views: 1999, Archived: 2000,
			Failed: 2, Halted: 1, LastAt: time.UnixMilli(1_735_000_000_000)}
	})
	want := `
# HELP amends_retention_archived_total Removed records whose history was archived first.
# TYPE amends_retention_archived_total counter
amends_retention_archived_total 2000
# HELP amends_retention_last_batch_timestamp_seconds When the last retention batch ended; 0 if none did.
# TYPE amends_retention_last_batch_timestamp_seconds gauge
amends_retention_last_batch_timestamp_seconds 1.735e+09
# HELP amends_retention_messages_total Compensation stream messages retention purged.
# TYPE amends_retention_messages_total counter
amends_retention_messages_total 6100
# HELP amends_retention_passes_total Retention passes of this instance, by outcome (ok, failed, halted: the stored progress is invalid).
# TYPE amends_retention_passes_total counter
amends_retention_passes_total{outcome="failed"} 2
amends_retention_passes_total{outcome="halted"} 1
amends_retention_passes_total{outcome="ok"} 7
# HELP amends_retention_removed_total Finished records retention removed, by kind (succeeded, unrecoverable).
# TYPE amends_retention_removed_total counter
amends_retention_removed_total{kind="succeeded"} 1900
amends_retention_removed_total{kind="unrecoverable"} 100
# HELP amends_retention_views_total Views retention deleted.
# TYPE amends_retention_views_total counter
amends_retention_views_total 1999
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
}
