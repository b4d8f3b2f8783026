package fanout_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/fanout"
	"github.com/amends-dev/amends/projection/index/indextest"
)

// newRecord returns a view of a record of processor that no instance
// holds yet, at version.
func newRecord(processor string, version uint64) api.View {
	v := views(rand.New(rand.NewPCG(99, 100)), 1)[0]
	v.State.ID = "new-record-" + processor
	v.State.Function.ProcessorName = processor
	v.Version = version
	return v
}

// A wait returns once the index of the record's holder holds the version,
// not before; a processor no one holds, a holder that is gone, and a
// holder that does not reach the version in time are each said.
func TestWaitForWaitsForTheIndexOfTheRecordsHolder(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(21, 22)), 100)
	c := newCluster(t, time.UnixMilli(indextest.Base), 0, vs, 2)
	q := c.querier(t, 10*time.Second)
	proc := vs[0].State.Function.ProcessorName
	rec := newRecord(proc, 1)
	owner := c.plan.Owners[c.plan.Of(proc, rec.State.ID)]
	c.parts[owner].Put(rec)

	// Version 2 is not in the holder's index: the wait ends unreached.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := q.WaitFor(ctx, proc, rec.State.ID, 2)
	cancel()
	require.ErrorIs(t, err, fanout.ErrNotReached)
	require.ErrorContains(t, err, owner)

	// Once the holder's index holds it, the wait returns.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- q.WaitFor(ctx, proc, rec.State.ID, 2)
	}()
	rec.Version = 2
	c.parts[owner].Put(rec)
	require.NoError(t, <-done)
	require.NoError(t, q.WaitFor(context.Background(), proc, rec.State.ID, 1), "a version already held")
	require.NoError(t, q.WaitFor(context.Background(), "Unplaced", "r-0", 0), "version 0: nothing to wait for")

	var inc *fanout.Incomplete
	err = q.WaitFor(context.Background(), "Unplaced", "r-1", 1)
	require.ErrorAs(t, err, &inc)
	require.Equal(t, []string{"Unplaced"}, inc.Missing)
	require.Empty(t, inc.Unanswered)

	c.stop(owner)
	err = q.WaitFor(context.Background(), proc, rec.State.ID, 2)
	require.ErrorAs(t, err, &inc)
	require.Equal(t, []string{c.plan.Of(proc, rec.State.ID)}, inc.Missing)
	require.Len(t, inc.Unanswered, 1)
	assert.Contains(t, inc.Unanswered[0].Reason, "no responder")

	require.ErrorIs(t, q.WaitFor(context.Background(), proc, "", 1), projection.ErrInvalidQuery)
}

// A responder holds at most Waits waits at once and answers one more
// busy at once; its queries are still answered meanwhile.
func TestAResponderBoundsItsWaits(t *testing.T) {
	nc, _ := natstest.New(t).Connect()
	vs := views(rand.New(rand.NewPCG(23, 24)), 20)
	sizes := map[string]uint64{}
	for _, v := range vs {
		sizes[v.State.Function.ProcessorName]++
	}
	plan, err := partition.Compute(sizes, []string{"solo"}, partition.Plan{})
	require.NoError(t, err)
	p := &enteringPart{part: &part{Index: memIndex(t, time.UnixMilli(indextest.Base), vs), held: plan.Held("solo")}, entered: make(chan struct{}, 1)}
	r, err := fanout.NewResponder(nc, p, fanout.ResponderConfig{Instance: "solo", Waits: 1, Workers: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, r.Run(ctx)) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	q, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: func(context.Context) (partition.Plan, error) { return plan, nil }, Timeout: 10 * time.Second})
	require.NoError(t, err)

	testwait.For(t, "the responder answers", func() bool {
		_, cov, err := q.Count(context.Background(), api.Filter{})
		return err == nil && cov.Complete()
	})
	proc := vs[0].State.Function.ProcessorName
	held := make(chan error, 1)
	go func() {
		// Never reached: it holds the one wait until the responder stops.
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		defer cancel()
		held <- q.WaitFor(ctx, proc, "never", 1)
	}()
	<-p.entered
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	err = q.WaitFor(ctx2, proc, "other", 1)
	var inc *fanout.Incomplete
	require.ErrorAs(t, err, &inc)
	require.Len(t, inc.Unanswered, 1)
	require.Equal(t, "busy: this instance holds 1 waits already; ask again later", inc.Unanswered[0].Reason)
	n, cov, err := q.Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.True(t, cov.Complete())
	require.Equal(t, len(vs), n, "a query is answered while the wait is held")
	cancel() // the responder stops, and its wait ends unreached
	require.Error(t, <-held)
}

// enteringPart signals each WaitFor it enters.
type enteringPart struct {
	*part
	entered chan struct{}
}

func (p *enteringPart) WaitFor(ctx context.Context, id string, version uint64) error {
	p.entered <- struct{}{}
	return p.part.WaitFor(ctx, id, version)
}

// Strict's WaitFor waits for the views bucket to hold the version, then
// for the holder's index; a record no partition holds yet has no index to
// wait for.
func TestStrictWaitsForTheBucketAndThenTheHolder(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(25, 26)), 60)
	c := newCluster(t, time.UnixMilli(indextest.Base), 0, vs, 2)
	var mu sync.Mutex
	bucket := map[string]api.View{}
	s := fanout.Strict{Querier: c.querier(t, 10*time.Second), Views: func(_ context.Context, id string) (api.View, error) {
		mu.Lock()
		defer mu.Unlock()
		v, ok := bucket[id]
		if !ok {
			return v, projection.ErrNotFound
		}
		return v, nil
	}}
	proc := vs[0].State.Function.ProcessorName
	rec := newRecord(proc, 1)
	owner := c.plan.Owners[c.plan.Of(proc, rec.State.ID)]

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := s.WaitFor(ctx, rec.State.ID, 1)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, rec.State.ID+" at version 1 in the views bucket")

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- s.WaitFor(ctx, rec.State.ID, 1)
	}()
	mu.Lock()
	bucket[rec.State.ID] = rec
	mu.Unlock()
	c.parts[owner].Put(rec)
	require.NoError(t, <-done)

	unplaced := newRecord("Unplaced", 3)
	mu.Lock()
	bucket[unplaced.State.ID] = unplaced
	mu.Unlock()
	require.NoError(t, s.WaitFor(context.Background(), unplaced.State.ID, 3))

	require.ErrorIs(t, fanout.Strict{Querier: s.Querier}.WaitFor(context.Background(), rec.State.ID, 1), fanout.ErrInvalidOption)
}

// The live members are asked though the plan places nothing on them: the
// processors they saw records of are named missing. When no instance
// answers, no one could name them, and the answer says so.
func TestTheMembersNameWhatThePlanDoesNotPlace(t *testing.T) {
	nc, _ := natstest.New(t).Connect()
	c := &cluster{nc: nc, parts: map[string]*part{}, cancels: map[string]context.CancelFunc{}, done: map[string]chan struct{}{}}
	p := &part{Index: memIndex(t, time.UnixMilli(indextest.Base), nil), held: []string{}, unplaced: []string{"Billing"}}
	c.start(t, "a member", p)
	empty := func(context.Context) (partition.Plan, error) { return partition.Plan{}, nil }
	members := func(context.Context) ([]string, error) { return []string{"a member"}, nil }

	q, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: empty, Members: members, Timeout: 10 * time.Second})
	require.NoError(t, err)
	n, cov, err := q.Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, []string{"Billing"}, cov.Missing)
	require.False(t, cov.Complete())

	p.mu.Lock()
	p.unplaced = nil
	p.mu.Unlock()
	_, cov, err = q.Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.True(t, cov.Complete(), "a cluster without records: empty, and true")

	alone, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: empty, Timeout: 10 * time.Second})
	require.NoError(t, err)
	_, cov, err = alone.Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.True(t, cov.Unseen)
	require.False(t, cov.Complete())
	_, err = fanout.Strict{Querier: alone}.Count(api.Filter{})
	require.ErrorIs(t, err, fanout.ErrIncomplete)
	require.ErrorContains(t, err, "no instance answered, so none named the processors the plan does not place yet")

	gone, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: empty, Members: func(context.Context) ([]string, error) {
		return nil, errors.New("lease bucket unreachable")
	}})
	require.NoError(t, err)
	_, _, err = gone.Count(context.Background(), api.Filter{})
	require.ErrorContains(t, err, "list the live instances: lease bucket unreachable")
}
