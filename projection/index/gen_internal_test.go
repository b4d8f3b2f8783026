package index

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// base is the epoch-ms time generated records cluster around.
const base = int64(1_735_000_000_000)

// randomView returns a plausible view of record i: names from small sets,
// times within an hour of base, every status and classification.
func randomView(r *rand.Rand, i int) api.View {
	retries := int32(r.IntN(6))
	spec := aggregate.RetrySpec{MaxRetries: int32(r.IntN(6)), MinBackoff: int32(r.IntN(300)), ExecutionTimeout: int32(r.IntN(300))}
	retryAt := base + r.Int64N(3_600_000)
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

// randomViews returns n views of randomView.
func randomViews(r *rand.Rand, n int) []api.View {
	views := make([]api.View, n)
	for i := range views {
		views[i] = randomView(r, i)
	}
	return views
}

// memIndex returns an index filled with views, without a bucket.
func memIndex(now time.Time, views []api.View) *Index {
	ix, err := New(WithClock(aggregate.ClockFunc(func() time.Time { return now })))
	if err != nil {
		panic(err)
	}
	ix.mu.Lock()
	for i := range views {
		ix.put(&views[i])
	}
	ix.mu.Unlock()
	return ix
}

// entryOf is the entry of v.
func entryOf(v *api.View, in *interner) entry {
	f := fieldsOf(v)
	return newEntry(&f, in)
}

// beginLoad begins a load that does not replace, as a first watch does.
func (ix *Index) beginLoad() { (&Batch{ix}).BeginLoad(false) }

// randomTime returns a time around the generated records' times, with
// extra weight on exact boundaries of v.
func randomTime(r *rand.Rand, v *api.View) time.Time {
	rs := v.State.RetryState
	switch r.IntN(4) {
	case 0:
		return time.UnixMilli(rs.TimeoutAt + r.Int64N(3) - 1)
	case 1:
		return time.UnixMilli(rs.NextRetryAt + r.Int64N(3) - 1)
	default:
		return time.UnixMilli(base + r.Int64N(4*3_600_000))
	}
}
