package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

// queryNow is the time the query scenarios ask at: within the hour the
// generated records fail in, so that some are due and some are not.
var queryNow = time.UnixMilli(queryBase + 1_800_000)

const queryBase = int64(1_735_000_000_000)

// querySmall is the index size the query scenarios compare against.
const querySmall = 10_000

// The bounds of Env.Records.
const (
	MinQueryRecords = 10_000
	MaxQueryRecords = 10_000_000
)

// querySizes are the two index sizes the query scenarios compare: 10k and
// Env.Records, by default 1M (quick: 100k).
func querySizes(env *Env) (small, large int) {
	switch {
	case env.Records > 0:
		return querySmall, env.Records
	case env.Quick:
		return querySmall, 100_000
	}
	return querySmall, 1_000_000
}

// queryIndex fills an index without a bucket with n generated records and
// returns it with the heap it takes per record.
func queryIndex(n int) (*projection.Index, float64, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix, err := projection.NewIndex(nil, nil, projection.WithClock(aggregate.ClockFunc(func() time.Time { return queryNow })))
	if err != nil {
		return nil, 0, err
	}
	r := rand.New(rand.NewPCG(uint64(n), 42))
	for i := range n {
		ix.Put(generatedView(r, i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return ix, float64(after.HeapAlloc-before.HeapAlloc) / float64(n), nil
}

// generatedView is a plausible record: names from small sets (20
// processors, 10 error codes), failures within an hour, every status and
// classification.
func generatedView(r *rand.Rand, i int) api.View {
	spec := aggregate.RetrySpec{MaxRetries: int32(r.IntN(6) + 1), MinBackoff: int32(r.IntN(300)), ExecutionTimeout: int32(r.IntN(300))}
	retries := int32(r.IntN(int(spec.MaxRetries) + 1))
	retryAt := queryBase + r.Int64N(3_600_000)
	return api.View{
		State: aggregate.State{
			ID: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "rec-%d", i)).String(),
			EventID: aggregate.EventID{
				ID:          uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "evt-%d", i)).String(),
				AggregateID: aggregate.WireAggregateID{ContextName: fmt.Sprintf("ctx-%d", r.IntN(5)), AggregateName: "order", AggregateID: fmt.Sprintf("order-%08d", r.IntN(10_000_000)), TenantID: aggregate.DefaultTenantID},
				Version:     uint64(r.IntN(100) + 1),
				Seq:         uint64(i + 1),
			},
			Function:    aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: fmt.Sprintf("svc-%d", r.IntN(5)), ProcessorName: fmt.Sprintf("Processor%d", r.IntN(20)), Name: fmt.Sprintf("on%d", r.IntN(5))},
			Error:       aggregate.ErrorDetails{ErrorCode: fmt.Sprintf("E%d", r.IntN(10)), ErrorMsg: "boom", StackTrace: "main.go:1"},
			ExecuteAt:   retryAt + r.Int64N(10_000),
			RetrySpec:   spec,
			RetryState:  aggregate.RetryState{Retries: retries, RetryAt: retryAt, TimeoutAt: retryAt + int64(spec.ExecutionTimeout)*1000, NextRetryAt: retryAt + int64(spec.MinBackoff)*1000<<retries},
			Status:      aggregate.Statuses[r.IntN(len(aggregate.Statuses))],
			Recoverable: aggregate.Recoverabilities[r.IntN(len(aggregate.Recoverabilities))],
		},
		Version: uint64(r.IntN(20) + 1), UpdatedAt: retryAt, Seq: uint64(i + 1),
	}
}

// indexCache keeps the generated indexes of one run by size: the query
// scenarios only read them, and building the large one takes seconds at
// every concurrency of a sweep otherwise. Used by one goroutine at a time
// (the Runner prepares scenarios one after another).
type indexCache struct {
	bySize map[int]cachedIndex
}

type cachedIndex struct {
	ix        *projection.Index
	perRecord float64
}

// index returns the generated index of n records, built on first use.
// Without a cache (an Env not run by a Runner) it builds a new one.
func (c *indexCache) index(n int) (*projection.Index, float64, error) {
	if c == nil {
		return queryIndex(n)
	}
	if got, ok := c.bySize[n]; ok {
		return got.ix, got.perRecord, nil
	}
	ix, perRecord, err := queryIndex(n)
	if err != nil {
		return nil, 0, err
	}
	if c.bySize == nil {
		c.bySize = map[int]cachedIndex{}
	}
	c.bySize[n] = cachedIndex{ix, perRecord}
	return ix, perRecord, nil
}

// prepareQuery compares one index query at two index sizes: the "raw"
// side is the small index, the amends side the large one, so the ratio
// says how much slower the query gets with 100 times (quick: 10 times)
// the records. The note gives the index's heap per record.
func prepareQuery(query func(*projection.Index) error) func(context.Context, *Env) (*Pair, error) {
	return func(ctx context.Context, env *Env) (*Pair, error) {
		small, large := querySizes(env)
		six, _, err := env.indexes.index(small)
		if err != nil {
			return nil, err
		}
		lix, perRecord, err := env.indexes.index(large)
		if err != nil {
			return nil, err
		}
		return &Pair{
			RawName:    fmt.Sprintf("%dk records", small/1000),
			AmendsName: fmt.Sprintf("%dk records", large/1000),
			Notes:      map[string]float64{"index bytes/record": perRecord},
			Raw:        func(context.Context, int, int) error { return query(six) },
			Amends:     func(context.Context, int, int) error { return query(lix) },
		}, nil
	}
}

func dueQuery(ix *projection.Index) error {
	if len(ix.Due(queryNow, 100)) == 0 {
		return fmt.Errorf("index.Due found nothing due at %s; the generated records should include due ones", queryNow)
	}
	return nil
}

func listQuery(ix *projection.Index) error {
	_, err := ix.List(api.Query{
		Filter: api.Filter{Processor: "Processor7", Status: aggregate.StatusFailed},
		Limit:  50,
	})
	return err
}

func summaryQuery(ix *projection.Index) error {
	sum, err := ix.Summary(api.Filter{})
	if err == nil && len(sum.Groups) == 0 {
		return fmt.Errorf("index.Summary found no failure group; the generated records should give some")
	}
	return err
}

func countQuery(ix *projection.Index) error {
	n, err := ix.Count(api.Filter{Status: aggregate.StatusFailed})
	if err == nil && n == 0 {
		return fmt.Errorf("index.Count found no FAILED record; the generated records should include some")
	}
	return err
}
