package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/scheduler"
)

type fakeIndex struct{}

func (fakeIndex) Summary(api.Filter) (api.Summary, error) {
	return api.Summary{
		ByStatus: []api.StatusCount{{Status: aggregate.StatusFailed, Recoverable: aggregate.Recoverable, Count: 3}},
		Views:    map[aggregate.View]int{aggregate.ViewToRetry: 3, aggregate.ViewNextRetry: 2},
	}, nil
}

func (fakeIndex) Count(f api.Filter) (int, error) {
	if f.View == aggregate.ViewNextRetry {
		return 2, nil
	}
	return 0, nil
}

func (fakeIndex) Due(now time.Time, limit int) []index.Due {
	return []index.Due{{ID: "a", NextRetryAt: now.Add(-90 * time.Second).UnixMilli()}}
}

func TestRecordsCollector(t *testing.T) {
	want := `
# HELP amends_records_in_view ExecutionFailed records in each operator view.
# TYPE amends_records_in_view gauge
amends_records_in_view{view="executing"} 0
amends_records_in_view{view="next-retry"} 2
amends_records_in_view{view="non-retryable"} 0
amends_records_in_view{view="succeeded"} 0
amends_records_in_view{view="to-retry"} 3
amends_records_in_view{view="unrecoverable"} 0
`
	require.NoError(t, testutil.CollectAndCompare(Records(fakeIndex{}), strings.NewReader(want), "amends_records_in_view"))
	n, err := testutil.GatherAndCount(registry(t, Records(fakeIndex{})), "amends_records")
	require.NoError(t, err)
	require.Equal(t, 9, n, "every status x recoverability, absent ones at 0")
}

func TestSchedulerCollector(t *testing.T) {
	now := time.UnixMilli(1_735_000_000_000)
	c := schedulerCollector(func() scheduler.Stats {
		return scheduler.Stats{Active: true, Passes: 4, Prepared: 7, Rejected: 1, Skipped: 12, BackingOff: 3}
	}, fakeIndex{}, func() time.Time { return now })
	want := `
# HELP amends_scheduler_backlog Records due now (the next-retry view).
# TYPE amends_scheduler_backlog gauge
amends_scheduler_backlog 2
# HELP amends_scheduler_oldest_due_age_seconds How long the oldest due record has been due; 0 if none is.
# TYPE amends_scheduler_oldest_due_age_seconds gauge
amends_scheduler_oldest_due_age_seconds 90
# HELP amends_scheduler_active 1 if this instance holds the scheduler lease.
# TYPE amends_scheduler_active gauge
amends_scheduler_active 1
# HELP amends_scheduler_skipped_total Due records passes left out because a prepare of theirs failed and they are backing off.
# TYPE amends_scheduler_skipped_total counter
amends_scheduler_skipped_total 12
# HELP amends_scheduler_backing_off Records backing off after a failed prepare, to be tried again later.
# TYPE amends_scheduler_backing_off gauge
amends_scheduler_backing_off 3
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"amends_scheduler_backlog", "amends_scheduler_oldest_due_age_seconds", "amends_scheduler_active",
		"amends_scheduler_skipped_total", "amends_scheduler_backing_off"))
	require.Equal(t, 7.0, testutil.ToFloat64(filterMetric(t, c, "prepared")))
}

func TestProcessorMessagesOfLiveAndReplayConsumersApart(t *testing.T) {
	var m processor.Metrics
	m.Delivered.Add(3)
	m.Acked.Add(2)
	m.Replay.Delivered.Add(7)
	m.Replay.Acked.Add(5)
	m.Replay.Terminated.Add(1)
	msgs, replayMsgs := processorMessageDescs()
	c := &collector{descs: []*prometheus.Desc{msgs, replayMsgs}, read: func() []sample { return messageSamples(msgs, replayMsgs, &m, "shop") }}
	want := `
# HELP amends_processor_messages_total Messages the processor's function consumers handled, by disposition.
# TYPE amends_processor_messages_total counter
amends_processor_messages_total{context="shop",disposition="ack_error"} 0
amends_processor_messages_total{context="shop",disposition="acked"} 2
amends_processor_messages_total{context="shop",disposition="delivered"} 3
amends_processor_messages_total{context="shop",disposition="naked"} 0
amends_processor_messages_total{context="shop",disposition="terminated"} 0
amends_processor_messages_total{context="shop",disposition="undecodable"} 0
# HELP amends_processor_replay_messages_total Messages of the compensation stream the processor's replay consumer handled, by disposition.
# TYPE amends_processor_replay_messages_total counter
amends_processor_replay_messages_total{context="shop",disposition="ack_error"} 0
amends_processor_replay_messages_total{context="shop",disposition="acked"} 5
amends_processor_replay_messages_total{context="shop",disposition="delivered"} 7
amends_processor_replay_messages_total{context="shop",disposition="naked"} 0
amends_processor_replay_messages_total{context="shop",disposition="terminated"} 1
amends_processor_replay_messages_total{context="shop",disposition="undecodable"} 0
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
}
