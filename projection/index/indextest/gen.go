// Package indextest makes random records and filters for the tests of
// the index and of what merges its answers: plausible views with names
// from small sets, every status and classification, and filters that
// pick a few fields of a record.
package indextest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// Base is the epoch-ms time generated records cluster around.
const Base = int64(1_735_000_000_000)

// RandomView returns a plausible view of record i: names from small sets,
// times within an hour of Base, every status and classification.
func RandomView(r *rand.Rand, i int) api.View {
	retries := int32(r.IntN(6))
	spec := aggregate.RetrySpec{MaxRetries: int32(r.IntN(6)), MinBackoff: int32(r.IntN(300)), ExecutionTimeout: int32(r.IntN(300))}
	retryAt := Base + r.Int64N(3_600_000)
	return api.View{
		State: aggregate.State{
			ID: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "rec-%d", i)).String(),
			EventID: aggregate.EventID{
				ID:          uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "evt-%d", i)).String(),
				AggregateID: aggregate.WireAggregateID{ContextName: fmt.Sprintf("ctx-%d", r.IntN(5)), AggregateName: fmt.Sprintf("agg-%d", r.IntN(10)), AggregateID: fmt.Sprintf("order-%08d", r.IntN(1_000_000)), TenantID: aggregate.DefaultTenantID},
				Version:     uint64(r.IntN(100) + 1),
			},
			Function: aggregate.FunctionInfo{
				FunctionKind:  aggregate.FunctionKinds[r.IntN(len(aggregate.FunctionKinds))],
				ContextName:   fmt.Sprintf("svc-%d", r.IntN(5)),
				ProcessorName: fmt.Sprintf("Processor%d", r.IntN(20)),
				Name:          fmt.Sprintf("on%d", r.IntN(5)),
			},
			Error:       aggregate.ErrorDetails{ErrorCode: fmt.Sprintf("E%d", r.IntN(10)), ErrorMsg: "boom", StackTrace: "main.go:1"},
			ExecuteAt:   retryAt + r.Int64N(10_000),
			RetrySpec:   spec,
			RetryState:  aggregate.RetryState{Retries: retries, RetryAt: retryAt, TimeoutAt: retryAt + int64(spec.ExecutionTimeout)*1000, NextRetryAt: retryAt + int64(spec.MinBackoff)*1000<<retries},
			Status:      aggregate.Statuses[r.IntN(len(aggregate.Statuses))],
			Recoverable: aggregate.Recoverabilities[r.IntN(len(aggregate.Recoverabilities))],
		},
		Version:   uint64(r.IntN(20) + 1),
		UpdatedAt: retryAt,
		Seq:       uint64(i + 1),
	}
}

// RandomViews returns n views of RandomView.
func RandomViews(r *rand.Rand, n int) []api.View {
	views := make([]api.View, n)
	for i := range views {
		views[i] = RandomView(r, i)
	}
	return views
}

// RandomTime returns a time around the generated records' times, with
// extra weight on exact boundaries of v.
func RandomTime(r *rand.Rand, v *api.View) time.Time {
	rs := v.State.RetryState
	switch r.IntN(4) {
	case 0:
		return time.UnixMilli(rs.TimeoutAt + r.Int64N(3) - 1)
	case 1:
		return time.UnixMilli(rs.NextRetryAt + r.Int64N(3) - 1)
	default:
		return time.UnixMilli(Base + r.Int64N(4*3_600_000))
	}
}

// RandomFilter sets a few fields from the values of record v.
func RandomFilter(r *rand.Rand, v *api.View, now time.Time) api.Filter {
	var f api.Filter
	for range r.IntN(3) {
		filterFields[r.IntN(len(filterFields))](r, &f, &v.State, now)
	}
	if r.IntN(10) == 0 {
		f.Processor = "no-such-processor"
	}
	return f
}

// filterFields set one field (or a pair) of a filter from a record's
// state.
var filterFields = [...]func(r *rand.Rand, f *api.Filter, s *aggregate.State, now time.Time){
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) { f.ID = s.ID },
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) { f.EventID = s.EventID.ID },
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.AggregateContext = s.EventID.AggregateID.ContextName
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.AggregateType = s.EventID.AggregateID.AggregateName
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.AggregateID = s.EventID.AggregateID.AggregateID
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.FunctionContext = s.Function.ContextName
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.Processor = s.Function.ProcessorName
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) { f.Function = s.Function.Name },
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.FunctionKind = s.Function.FunctionKind
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.Status, f.Recoverable = s.Status, s.Recoverable
	},
	func(_ *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) { f.ErrorCode = s.Error.ErrorCode },
	func(r *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.ExecuteAtFrom, f.ExecuteAtTo = time.UnixMilli(s.ExecuteAt-r.Int64N(600_000)), time.UnixMilli(s.ExecuteAt+r.Int64N(600_000))
	},
	func(r *rand.Rand, f *api.Filter, _ *aggregate.State, _ time.Time) { f.MinRetries = int32(r.IntN(4)) },
	func(r *rand.Rand, f *api.Filter, _ *aggregate.State, now time.Time) {
		f.View, f.Now = aggregate.Views[r.IntN(len(aggregate.Views))], now
	},
	func(r *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		next := s.RetryState.NextRetryAt
		f.NextRetryAtFrom, f.NextRetryAtTo = time.UnixMilli(next-r.Int64N(600_000)), time.UnixMilli(next+r.Int64N(600_000))
	},
	func(r *rand.Rand, f *api.Filter, s *aggregate.State, _ time.Time) {
		f.IDPrefix = s.ID[:min(len(s.ID), 4+r.IntN(3))]
	},
}
