package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// summaries answers Summary by the filter's status and recoverability.
type summaries map[[2]string][]api.FailureGroup

func (s summaries) Summary(f api.Filter) (api.Summary, error) {
	return api.Summary{Groups: s[[2]string{string(f.Status), string(f.Recoverable)}]}, nil
}

const nowMs = int64(1_735_000_000_000)

func TestFailuresReportsAgeAndFinalFailuresByFunction(t *testing.T) {
	s := summaries{
		{"", ""}: {
			{Processor: "Mailer", Function: "onPlaced", ErrorCode: "Timeout", OldestFailureAt: nowMs - 90_000},
			{Processor: "Mailer", Function: "onPlaced", ErrorCode: "Refused", OldestFailureAt: nowMs - 30_000},
			{Processor: "Billing", Function: "charge", ErrorCode: "Declined", OldestFailureAt: nowMs - 5_000},
			{Processor: "Done", Function: "fn", ErrorCode: "X"}, // every record succeeded: no age
		},
		{"FAILED", ""}: {
			{Processor: "Mailer", Function: "onPlaced", Exhausted: 2, Retryable: 4},
			{Processor: "Billing", Function: "charge", Exhausted: 0, Retryable: 1},
		},
		{"FAILED", "UNRECOVERABLE"}: {
			{Processor: "Billing", Function: "charge", Exhausted: 0, Retryable: 1},
		},
	}
	c := Failures(s, func() time.Time { return time.UnixMilli(nowMs) })
	want := `
# HELP amends_oldest_open_failure_age_seconds Seconds since the oldest unfinished record of each function last failed.
# TYPE amends_oldest_open_failure_age_seconds gauge
amends_oldest_open_failure_age_seconds{function="Billing.charge"} 5
amends_oldest_open_failure_age_seconds{function="Mailer.onPlaced"} 90
# HELP amends_open_final_failures FAILED records of each function with no automatic retry left (retries exhausted or UNRECOVERABLE).
# TYPE amends_open_final_failures gauge
amends_open_final_failures{function="Billing.charge"} 1
amends_open_final_failures{function="Mailer.onPlaced"} 2
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
}

func TestFailuresCapsTheFunctionLabel(t *testing.T) {
	var groups []api.FailureGroup
	for i := range MaxFunctions + 10 {
		groups = append(groups, api.FailureGroup{Processor: "P", Function: fmt.Sprintf("fn%03d", i), OldestFailureAt: nowMs - int64(i+1)*1000})
	}
	c := Failures(summaries{{"", ""}: groups}, func() time.Time { return time.UnixMilli(nowMs) })
	require.Equal(t, MaxFunctions+1, testutil.CollectAndCount(c, "amends_oldest_open_failure_age_seconds"), "the cap plus the overflow series")
	ages := values(t, c, "amends_oldest_open_failure_age_seconds")
	assert.Equal(t, float64(MaxFunctions+10), ages[fmt.Sprintf("P.fn%03d", MaxFunctions+9)], "the oldest functions keep their series")
	assert.Equal(t, float64(10), ages[recorder.OtherFunctions], "the overflow holds the largest age of the rest")
	_, youngest := ages["P.fn000"]
	assert.False(t, youngest, "the youngest function is in the overflow")
}

// executor answers every command with a record in the given state.
type executor struct{ state aggregate.State }

func (e executor) Execute(_ context.Context, id string, _ aggregate.Command, _ aggregate.Meta) (aggregate.Result, error) {
	return aggregate.Result{ID: id, State: e.state}, nil
}

func TestRecorderReportsAttemptsAndFinalFailures(t *testing.T) {
	exhausted := aggregate.State{Status: aggregate.StatusFailed, Recoverable: aggregate.Recoverable,
		RetrySpec: aggregate.RetrySpec{MaxRetries: 0}}
	r, err := recorder.New(executor{state: exhausted})
	require.NoError(t, err)
	fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Mailer", Name: "onPlaced"}
	x := processor.Execution{EventID: aggregate.EventID{ID: "e1", Version: 1}, Function: &fn, Err: errors.New("boom"), ExecuteAt: time.UnixMilli(nowMs)}
	out, err := r.Record(context.Background(), x)
	require.NoError(t, err)
	require.Equal(t, processor.OutcomeRecorded, out)
	c := Recorder(r)
	want := `
# HELP amends_attempts_total Attempts (first failures and replays) written to records, by outcome.
# TYPE amends_attempts_total counter
amends_attempts_total{outcome="failed"} 0
amends_attempts_total{outcome="first_failure"} 1
amends_attempts_total{outcome="stale"} 0
amends_attempts_total{outcome="succeeded"} 0
# HELP amends_final_failures_total Failures that left their record with no automatic retry (retries exhausted or UNRECOVERABLE), by function.
# TYPE amends_final_failures_total counter
amends_final_failures_total{function="Mailer.onPlaced"} 1
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "amends_attempts_total", "amends_final_failures_total"))
}

// values collects c's samples of metric name by their function label.
func values(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1024)
	c.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		if !strings.Contains(m.Desc().String(), `"amends_`) || !strings.Contains(m.Desc().String(), `"`+name+`"`) {
			continue
		}
		var pb dto.Metric
		require.NoError(t, m.Write(&pb))
		out[pb.GetLabel()[0].GetValue()] = pb.GetGauge().GetValue()
	}
	return out
}
