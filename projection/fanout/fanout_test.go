package fanout_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/fanout"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/projection/index/indextest"
	"github.com/amends-dev/amends/retention"
	"github.com/amends-dev/amends/scheduler"
)

// part is an index and the partitions it holds.
type part struct {
	*index.Index
	mu       sync.Mutex
	held     []string
	unplaced []string
	loading  bool
	calls    atomic.Int32
	// onPartitions, if set, gives the partitions of the n-th call instead.
	onPartitions func(n int32) []string
}

func (p *part) Unplaced() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unplaced
}

func (p *part) Partitions() ([]string, bool) {
	n := p.calls.Add(1)
	if p.onPartitions != nil {
		return p.onPartitions(n), true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, !p.loading
}

// memIndex returns an index of views whose now is now.
func memIndex(t *testing.T, now time.Time, views []api.View) *index.Index {
	t.Helper()
	ix, err := index.New(index.WithClock(aggregate.ClockFunc(func() time.Time { return now })))
	require.NoError(t, err)
	for _, v := range views {
		ix.Put(v)
	}
	return ix
}

// cluster is k instances, each answering for the partitions plan gives it
// from an index of their records.
type cluster struct {
	nc      *nats.Conn
	plan    partition.Plan
	parts   map[string]*part
	cancels map[string]context.CancelFunc
	done    map[string]chan struct{}
}

// newCluster places views on k instances as package partition does and
// starts a Responder for each.
// Instance i's clock is i*skew ahead of now.
func newCluster(t *testing.T, now time.Time, skew time.Duration, views []api.View, k int) *cluster {
	t.Helper()
	nc, _ := natstest.New(t).Connect()
	sizes := map[string]uint64{}
	for i := range views {
		sizes[views[i].State.Function.ProcessorName]++
	}
	instances := make([]string, k)
	for i := range instances {
		instances[i] = fmt.Sprint("instance ", i) // a name that is not a plain token
	}
	plan, err := partition.Compute(sizes, instances, partition.Plan{})
	require.NoError(t, err)
	byOwner := map[string][]api.View{}
	for _, v := range views {
		owner := plan.Owners[plan.Of(v.State.Function.ProcessorName, v.State.ID)]
		byOwner[owner] = append(byOwner[owner], v)
	}
	c := &cluster{nc: nc, plan: plan, parts: map[string]*part{}, cancels: map[string]context.CancelFunc{}, done: map[string]chan struct{}{}}
	for i, in := range instances {
		c.start(t, in, &part{Index: memIndex(t, now.Add(time.Duration(i)*skew), byOwner[in]), held: plan.Held(in)})
	}
	return c
}

// start runs a Responder of p as instance in until the test ends or stop.
func (c *cluster) start(t *testing.T, in string, p fanout.Part) {
	t.Helper()
	r, err := fanout.NewResponder(c.nc, p, fanout.ResponderConfig{Instance: in})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); assert.NoError(t, r.Run(ctx)) }()
	c.cancels[in], c.done[in] = cancel, done
	if pp, ok := p.(*part); ok {
		c.parts[in] = pp
	}
	t.Cleanup(func() { c.stop(in) })
	// Run has subscribed once a request gets a reply (one it refuses, so
	// that the part is not asked).
	testwait.For(t, in+" answers", func() bool {
		_, err := c.nc.Request(subjectOf(in), []byte(`{}`), 5*time.Second)
		return err == nil
	})
}

// subjectOf is the subject instance answers on: its name is not a plain
// token, so it is encoded.
func subjectOf(instance string) string {
	return fanout.DefaultPrefix + ".=" + base64.RawURLEncoding.EncodeToString([]byte(instance))
}

// stop stops instance in's Responder and waits for it.
func (c *cluster) stop(in string) {
	c.cancels[in]()
	<-c.done[in]
}

func (c *cluster) querier(t *testing.T, timeout time.Duration) *fanout.Querier {
	t.Helper()
	q, err := fanout.NewQuerier(c.nc, fanout.QuerierConfig{
		Plan:    func(context.Context) (partition.Plan, error) { return c.plan, nil },
		Timeout: timeout,
	})
	require.NoError(t, err)
	return q
}

// views returns n random records whose fingerprints each have one
// function and error code, as real ones do.
func views(r *rand.Rand, n int) []api.View {
	vs := indextest.RandomViews(r, n)
	for i := range vs {
		s := &vs[i].State
		s.Error.Fingerprint = "fp-" + s.Function.ContextName + s.Function.ProcessorName + s.Function.Name + s.Error.ErrorCode
	}
	return vs
}

// Over NATS, the answers merged from 1 to 4 instances equal those of one
// index holding every record, for random filters, sorts and page sizes:
// every page of a listing with its cursor, the counts and the summaries
// (a fingerprint's sample message aside: any of its failures'). With
// instance clocks that agree, a filter's Now is left to them; with clocks
// 17 minutes apart, a filter with a Now is answered at it by every one.
func TestTheAnswersOfEveryInstanceAreThoseOfOneIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	vs := views(r, 900)
	now := time.UnixMilli(indextest.Base + 1_800_000)
	whole := memIndex(t, now, vs)
	ctx := context.Background()
	for run := 2; run <= 8; run++ {
		k, skewed := run/2, run%2 == 1
		c := newCluster(t, now, map[bool]time.Duration{true: 17 * time.Minute}[skewed], vs, k)
		q := c.querier(t, 10*time.Second)
		for range 15 {
			f := indextest.RandomFilter(r, &vs[r.IntN(len(vs))], now)
			f.Now = map[bool]time.Time{true: now}[skewed]
			query := api.Query{Filter: f, Sort: api.Sort{Field: api.SortFields[r.IntN(len(api.SortFields))], Desc: r.IntN(2) == 0}, Limit: 1 + r.IntN(80)}
			for pages := 0; ; pages++ {
				require.Less(t, pages, len(vs)+2, "paging ends")
				want, err := whole.List(query)
				require.NoError(t, err)
				got, cov, err := q.List(ctx, query)
				require.NoError(t, err)
				require.True(t, cov.Complete(), "%+v", cov)
				require.Equal(t, want, got, "%d instances, page %d of %+v", k, pages, query)
				if got.Next == "" {
					break
				}
				query.Cursor = got.Next
			}
			wantN, err := whole.Count(f)
			require.NoError(t, err)
			gotN, cov, err := q.Count(ctx, f)
			require.NoError(t, err)
			require.True(t, cov.Complete(), "%+v", cov)
			require.Equal(t, wantN, gotN, "%d instances, Count %+v", k, f)

			wantSum, err := whole.Summary(f)
			require.NoError(t, err)
			gotSum, cov, err := q.Summary(ctx, f)
			require.NoError(t, err)
			require.True(t, cov.Complete(), "%+v", cov)
			require.Equal(t, wantSum, gotSum, "%d instances, Summary %+v", k, f)
			wantFps, err := whole.FingerprintSummary(f)
			require.NoError(t, err)
			gotFps, cov, err := q.FingerprintSummary(ctx, f)
			require.NoError(t, err)
			require.True(t, cov.Complete(), "%+v", cov)
			require.Len(t, gotFps, len(wantFps))
			for i := range gotFps {
				gotFps[i].SampleMessage = wantFps[i].SampleMessage
			}
			require.Equal(t, wantFps, gotFps, "%d instances, FingerprintSummary %+v", k, f)
		}
	}
}

// An instance that is gone is named, with the partitions it held; the
// answer is that of the others, never short without saying so.
func TestAnInstanceThatIsGoneIsNamedWithItsPartitions(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(3, 4)), 600)
	now := time.UnixMilli(indextest.Base + 1_800_000)
	c := newCluster(t, now, 0, vs, 3)
	gone := "instance 1"
	c.stop(gone)
	q := c.querier(t, 10*time.Second)

	n, cov, err := q.Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.Equal(t, c.plan.Held(gone), cov.Missing)
	require.Len(t, cov.Unanswered, 1)
	assert.Equal(t, gone, cov.Unanswered[0].Instance)
	assert.Contains(t, cov.Unanswered[0].Reason, "no responder")
	require.False(t, cov.Complete())
	require.Equal(t, len(vs)-c.parts[gone].Len(), n, "the others' records, all of them")

	page, cov, err := q.List(context.Background(), api.Query{Limit: api.MaxLimit})
	require.NoError(t, err)
	require.Equal(t, c.plan.Held(gone), cov.Missing)
	require.Len(t, page.Items, len(vs)-c.parts[gone].Len())
}

// A part that does not answer within the timeout is named; the others'
// answers are used.
func TestAnInstanceThatDoesNotAnswerInTimeIsNamed(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(5, 6)), 200)
	now := time.UnixMilli(indextest.Base + 1_800_000)
	c := newCluster(t, now, 0, vs, 2)
	slow := "instance 0"
	c.stop(slow)
	release := make(chan struct{})
	defer close(release)
	blocked := &blockingPart{Part: c.parts[slow], release: release}
	c.start(t, slow, blocked)

	n, cov, err := c.querier(t, time.Second).Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.Equal(t, c.plan.Held(slow), cov.Missing)
	require.Len(t, cov.Unanswered, 1)
	assert.Equal(t, slow, cov.Unanswered[0].Instance)
	assert.Contains(t, cov.Unanswered[0].Reason, "no reply within 1s")
	require.Equal(t, len(vs)-c.parts[slow].Len(), n)
}

// blockingPart answers Count only once release is closed.
type blockingPart struct {
	fanout.Part
	release chan struct{}
}

func (b *blockingPart) Count(f api.Filter) (int, error) {
	<-b.release
	return b.Part.Count(f)
}

// A query the index would refuse is refused before anything is sent, with
// the index's error.
func TestABadQueryIsRefusedBeforeItIsSent(t *testing.T) {
	nc, _ := natstest.New(t).Connect()
	q, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: func(context.Context) (partition.Plan, error) {
		t.Error("the plan was read for a bad query")
		return partition.Plan{}, nil
	}})
	require.NoError(t, err)
	ctx := context.Background()
	_, _, err = q.List(ctx, api.Query{Sort: api.Sort{Field: "nope"}})
	require.ErrorIs(t, err, index.ErrInvalidQuery)
	_, _, err = q.List(ctx, api.Query{Cursor: "not-a-cursor"})
	require.ErrorIs(t, err, index.ErrInvalidQuery)
	_, _, err = q.Count(ctx, api.Filter{View: "nope"})
	require.ErrorIs(t, err, index.ErrInvalidQuery)
	_, _, err = q.Summary(ctx, api.Filter{ID: strings.Repeat("x", fanout.MaxRequestBytes)})
	require.ErrorIs(t, err, index.ErrInvalidQuery)
	require.ErrorContains(t, err, "over the limit of 16384")
}

// A Responder answers a request it cannot read with why, and goes on
// answering.
func TestAResponderAnswersABadRequestWithWhy(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(7, 8)), 50)
	now := time.UnixMilli(indextest.Base)
	c := newCluster(t, now, 0, vs, 1)
	for name, c2 := range map[string]struct{ data, want string }{
		"not JSON":            {`{`, "the request is not a query"},
		"an unknown field":    {`{"op":"count","query":{},"x":1}`, `"x"`},
		"an unknown op":       {`{"op":"drop","query":{}}`, `op "drop" is not one of`},
		"a bad view":          {`{"op":"count","query":{"filter":{"view":"nope"}}}`, "view"},
		"too large":           {`{"op":"count","query":{"filter":{"id":"` + strings.Repeat("x", fanout.MaxRequestBytes) + `"}}}`, "over the limit of 16384"},
		"a count with an id":  {`{"op":"count","query":{},"id":"r1"}`, "a count request has no id"},
		"a wait without id":   {`{"op":"wait","query":{},"version":1,"wait_ms":10}`, "id: record id is empty"},
		"a wait at version 0": {`{"op":"wait","query":{},"id":"r1","wait_ms":10}`, "version: must be at least 1"},
		"a wait too long":     {`{"op":"wait","query":{},"id":"r1","version":1,"wait_ms":30001}`, "wait_ms: 30001 is not between 1 and 30000"},
		"a wait with a query": {`{"op":"wait","query":{"limit":3},"id":"r1","version":1,"wait_ms":10}`, "a wait request has no query"},
	} {
		m, err := c.nc.Request(subjectOf("instance 0"), []byte(c2.data), 10*time.Second)
		require.NoError(t, err, name)
		var r struct {
			Partitions []string
			Error      struct{ Kind, Message string }
		}
		require.NoError(t, json.Unmarshal(m.Data, &r), name)
		assert.Equal(t, "invalid_query", r.Error.Kind, name)
		assert.Contains(t, r.Error.Message, c2.want, name)
	}
	n, cov, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.True(t, cov.Complete())
	require.Equal(t, len(vs), n)
}

// A reply the querier cannot use is that instance's failure, named; two
// instances that answer for one partition cannot be added, and are an
// error.
func TestABadReplyIsTheInstancesFailure(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(9, 10)), 100)
	now := time.UnixMilli(indextest.Base)
	for name, c2 := range map[string]struct{ reply, encoding, want string }{
		"not JSON":            {`{`, "", "does not decode"},
		"not gzip":            {`{"partitions":[],"count":1}`, "gzip", "does not decompress"},
		"another encoding":    {`{"partitions":[],"count":1}`, "br", `encoding "br" is not gzip`},
		"an unknown field":    {`{"partitions":[],"count":1,"x":1}`, "", "does not decode"},
		"another op's answer": {`{"partitions":[],"page":{"items":[]}}`, "", "holds the answer of [list]"},
		"no answer":           {`{"partitions":[]}`, "", "holds the answer of no op"},
		"an error and more":   {`{"partitions":[],"count":1,"error":{"kind":"failed","message":"m"}}`, "", "both an error and an answer"},
		"a negative count":    {`{"partitions":[],"count":-1}`, "", "count is -1"},
		"a bad partition":     {`{"partitions":["P/999"],"count":1}`, "", `"P/999"`},
		"a partition twice":   {`{"partitions":["P","P"],"count":1}`, "", `"P" twice`},
		"a part as unplaced":  {`{"partitions":[],"unplaced":["P/1/2"],"count":1}`, "", "not a processor's name"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, now, 0, vs, 2)
			liar := "instance 1"
			c.stop(liar)
			sub, err := c.nc.Subscribe(subjectOf("instance 1"), func(m *nats.Msg) {
				out := &nats.Msg{Subject: m.Reply, Data: []byte(c2.reply), Header: nats.Header{}}
				if c2.encoding != "" {
					out.Header.Set("Amends-Encoding", c2.encoding)
				}
				_ = m.RespondMsg(out)
			})
			require.NoError(t, err)
			defer func() { _ = sub.Unsubscribe() }()
			require.NoError(t, c.nc.Flush())
			n, cov, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
			require.NoError(t, err)
			require.Equal(t, c.plan.Held(liar), cov.Missing)
			require.Len(t, cov.Unanswered, 1)
			assert.Contains(t, cov.Unanswered[0].Reason, c2.want)
			require.Equal(t, c.parts["instance 0"].Len(), n)
		})
	}
	t.Run("a bomb", func(t *testing.T) {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		require.NoError(t, err)
		_, err = zw.Write(bytes.Repeat([]byte(" "), fanout.MaxReplyBytes+1))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		c := newCluster(t, now, 0, vs, 2)
		c.stop("instance 1")
		sub, err := c.nc.Subscribe(subjectOf("instance 1"), func(m *nats.Msg) {
			_ = m.RespondMsg(&nats.Msg{Subject: m.Reply, Data: buf.Bytes(), Header: nats.Header{"Amends-Encoding": []string{"gzip"}}})
		})
		require.NoError(t, err)
		defer func() { _ = sub.Unsubscribe() }()
		require.NoError(t, c.nc.Flush())
		_, cov, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
		require.NoError(t, err)
		require.Len(t, cov.Unanswered, 1)
		assert.Contains(t, cov.Unanswered[0].Reason, "over 67108864 bytes decompressed")
	})
	t.Run("a partition of another", func(t *testing.T) {
		c := newCluster(t, now, 0, vs, 2)
		c.parts["instance 1"].mu.Lock()
		c.parts["instance 1"].held = append(c.parts["instance 1"].held, c.plan.Held("instance 0")[0])
		c.parts["instance 1"].mu.Unlock()
		_, _, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
		require.ErrorIs(t, err, fanout.ErrBadReply)
		require.ErrorContains(t, err, "both answer for the records of partition")
	})
}

// An instance whose partitions change while it answers says so, and is
// asked once more.
func TestAnInstanceWhosePartitionsMovedIsAskedAgain(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(11, 12)), 100)
	now := time.UnixMilli(indextest.Base)
	c := newCluster(t, now, 0, vs, 1)
	in := "instance 0"
	held := c.plan.Held(in)
	c.stop(in)
	p := &part{Index: c.parts[in].Index, onPartitions: func(n int32) []string {
		if n == 2 { // the first request's second look
			return nil
		}
		return held
	}}
	c.start(t, in, p)
	n, cov, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.True(t, cov.Complete(), "%+v", cov)
	require.Equal(t, len(vs), n)
	require.EqualValues(t, 4, p.calls.Load(), "two requests, two looks each")
}

// An answer larger than the connection takes is refused with why.
func TestAnAnswerTooLargeIsNamed(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	vs := views(r, api.MaxLimit)
	for i := range vs {
		// Random text: a page of it does not compress below the limit.
		noise := make([]byte, 1536)
		for j := range noise {
			noise[j] = byte(r.Uint32())
		}
		vs[i].State.EventID.AggregateID.AggregateID = fmt.Sprint(i, base64.RawURLEncoding.EncodeToString(noise))
	}
	now := time.UnixMilli(indextest.Base)
	c := newCluster(t, now, 0, vs, 1)
	_, cov, err := c.querier(t, 10*time.Second).List(context.Background(), api.Query{Limit: api.MaxLimit})
	require.NoError(t, err)
	require.Len(t, cov.Unanswered, 1)
	assert.Contains(t, cov.Unanswered[0].Reason, "too_large")
	assert.Contains(t, cov.Unanswered[0].Reason, "ask for a smaller page")
	require.Equal(t, c.plan.Held("instance 0"), cov.Missing)
}

// A large answer that compresses is sent gzipped and answered in full:
// a page of views whose JSON is over the connection's limit.
func TestALargeAnswerIsSentCompressed(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	vs := views(r, api.MaxLimit)
	for i := range vs {
		vs[i].State.EventID.AggregateID.AggregateID = fmt.Sprint(i, strings.Repeat("a", 2048))
	}
	now := time.UnixMilli(indextest.Base)
	c := newCluster(t, now, 0, vs, 1)
	whole := memIndex(t, now, vs)
	q := api.Query{Limit: api.MaxLimit}
	want, err := whole.List(q)
	require.NoError(t, err)
	raw, err := json.Marshal(want)
	require.NoError(t, err)
	require.Greater(t, int64(len(raw)), c.nc.MaxPayload(), "the page is over the limit uncompressed")
	page, cov, err := c.querier(t, 10*time.Second).List(context.Background(), q)
	require.NoError(t, err)
	require.True(t, cov.Complete(), "%+v", cov)
	require.Equal(t, want, page)
}

func TestTheConfigurationIsChecked(t *testing.T) {
	nc, _ := natstest.New(t).Connect()
	ix, err := index.New()
	require.NoError(t, err)
	p := &part{Index: ix}
	for name, cfg := range map[string]fanout.ResponderConfig{
		"no instance": {},
		"a long name": {Instance: strings.Repeat("i", 257)},
		"workers":     {Instance: "a", Workers: 65},
		"a queue":     {Instance: "a", Queue: -1},
	} {
		_, err := fanout.NewResponder(nc, p, cfg)
		require.ErrorIs(t, err, fanout.ErrInvalidOption, name)
	}
	_, err = fanout.NewQuerier(nc, fanout.QuerierConfig{})
	require.ErrorIs(t, err, fanout.ErrInvalidOption)
	_, err = fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: func(context.Context) (partition.Plan, error) { return partition.Plan{}, nil }, Timeout: time.Hour})
	require.ErrorIs(t, err, fanout.ErrInvalidOption)
}

// A plan's partition is covered when the replies hold all its slots,
// whatever split the instances answer by (one may act on an older plan);
// two replies that share a slot are an error.
func TestCoverageIsBySlots(t *testing.T) {
	plan := partition.Plan{Splits: map[string]int{"P": 2}, Owners: map[string]string{"P/0/2": "a", "P/1/2": "b", "Q": "b"}}
	// count asks a Querier of plan while a and b answer with their
	// partitions and counts.
	count := func(t *testing.T, a, b []string) (int, fanout.Coverage, error) {
		nc, _ := natstest.New(t).Connect()
		for in, parts := range map[string][]string{"a": a, "b": b} {
			sub, err := nc.Subscribe(fanout.DefaultPrefix+"."+in, func(m *nats.Msg) {
				data, _ := json.Marshal(map[string]any{"partitions": parts, "count": 10 * len(parts)})
				_ = m.Respond(data)
			})
			require.NoError(t, err)
			t.Cleanup(func() { _ = sub.Unsubscribe() })
		}
		require.NoError(t, nc.Flush())
		q, err := fanout.NewQuerier(nc, fanout.QuerierConfig{Plan: func(context.Context) (partition.Plan, error) { return plan, nil }})
		require.NoError(t, err)
		return q.Count(context.Background(), api.Filter{})
	}
	t.Run("a on the plan before the split", func(t *testing.T) {
		n, cov, err := count(t, []string{"P"}, []string{"Q"})
		require.NoError(t, err)
		require.True(t, cov.Complete(), "%+v", cov)
		require.Equal(t, 20, n)
	})
	t.Run("b on a later plan, with half of P/1/2", func(t *testing.T) {
		n, cov, err := count(t, []string{"P/0/2"}, []string{"P/1/4", "Q"})
		require.NoError(t, err)
		require.Equal(t, []string{"P/1/2"}, cov.Missing)
		require.Equal(t, 30, n)
	})
	t.Run("overlapping parts", func(t *testing.T) {
		_, _, err := count(t, []string{"P"}, []string{"P/1/2", "Q"})
		require.ErrorIs(t, err, fanout.ErrBadReply)
		require.ErrorContains(t, err, `"P/1/2"`)
	})
}

// An instance that is loading its partitions says so; its partitions are
// named missing.
func TestAnInstanceLoadingItsPartitionsIsNamed(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(15, 16)), 200)
	now := time.UnixMilli(indextest.Base)
	c := newCluster(t, now, 0, vs, 2)
	loading := "instance 1"
	c.parts[loading].mu.Lock()
	c.parts[loading].loading = true
	c.parts[loading].mu.Unlock()
	n, cov, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.Equal(t, c.plan.Held(loading), cov.Missing)
	require.Len(t, cov.Unanswered, 1)
	assert.Contains(t, cov.Unanswered[0].Reason, "loading")
	require.Equal(t, len(vs)-c.parts[loading].Len(), n)
}

// Strict reads as an index does for the drains, the parked releases and
// the retention sweeper.
var (
	_ scheduler.RecordLister = fanout.Strict{}
	_ retention.Records      = fanout.Strict{}
)

// Strict answers as one index of every record, or says which partitions
// it lacks instead of answering short.
func TestStrictAnswersInFullOrNotAtAll(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(17, 18)), 300)
	now := time.UnixMilli(indextest.Base + 1_800_000)
	whole := memIndex(t, now, vs)
	c := newCluster(t, now, 0, vs, 3)
	s := fanout.Strict{Querier: c.querier(t, 10*time.Second)}
	f := api.Filter{Status: aggregate.StatusFailed}
	q := api.Query{Filter: f, Limit: 17, Sort: api.Sort{Field: api.SortRetries, Desc: true}}

	wantPage, err := whole.List(q)
	require.NoError(t, err)
	page, err := s.List(q)
	require.NoError(t, err)
	require.Equal(t, wantPage, page)
	wantN, err := whole.Count(f)
	require.NoError(t, err)
	n, err := s.Count(f)
	require.NoError(t, err)
	require.Equal(t, wantN, n)
	wantSum, err := whole.Summary(f)
	require.NoError(t, err)
	sum, err := s.Summary(f)
	require.NoError(t, err)
	require.Equal(t, wantSum, sum)
	wantFps, err := whole.FingerprintSummary(f)
	require.NoError(t, err)
	fps, err := s.FingerprintSummary(f)
	require.NoError(t, err)
	require.Len(t, fps, len(wantFps))

	gone := "instance 2"
	c.stop(gone)
	_, err = s.Count(f)
	require.ErrorIs(t, err, fanout.ErrIncomplete)
	var inc *fanout.Incomplete
	require.ErrorAs(t, err, &inc)
	require.Equal(t, c.plan.Held(gone), inc.Missing)
	require.ErrorContains(t, err, gone+": no responder")
	_, err = s.List(q)
	require.ErrorIs(t, err, fanout.ErrIncomplete)
}

// placedCluster runs two instances over vs and returns them with a
// processor the plan places (on instance 0).
func placedCluster(t *testing.T, vs []api.View) (*cluster, string) {
	t.Helper()
	c := newCluster(t, time.UnixMilli(indextest.Base), 0, vs, 2)
	proc, _, err := partition.SlotsOfID(c.plan.Held("instance 0")[0])
	require.NoError(t, err)
	return c, proc
}

// A processor that an instance saw records of and that the plan does not
// place yet is named missing: its records are in no one's index.
func TestAnUnplacedProcessorIsNamedMissing(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(19, 20)), 100)
	c, proc := placedCluster(t, vs)
	c.parts["instance 1"].mu.Lock()
	c.parts["instance 1"].unplaced = []string{"Newcomer", proc} // proc was unplaced when seen, and is placed now
	c.parts["instance 1"].mu.Unlock()
	n, cov, err := c.querier(t, 10*time.Second).Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.Equal(t, []string{"Newcomer"}, cov.Missing)
	require.Empty(t, cov.Unanswered)
	require.Equal(t, len(vs), n)
}

// A processor the querier's own instance knows (Processors) that the plan
// does not place and no answer holds is named missing, though no member
// names it: a plan that stopped placing it (its holder died before it
// reported it) is not short without saying so.
func TestAProcessorTheQuerierKnowsIsNamedMissingWhenNoOneHoldsIt(t *testing.T) {
	vs := views(rand.New(rand.NewPCG(21, 22)), 100)
	c, proc := placedCluster(t, vs)
	q, err := fanout.NewQuerier(c.nc, fanout.QuerierConfig{
		Plan:       func(context.Context) (partition.Plan, error) { return c.plan, nil },
		Processors: func() []string { return []string{"Dropped", proc} }, // proc is placed and held
		Timeout:    10 * time.Second,
	})
	require.NoError(t, err)
	n, cov, err := q.Count(context.Background(), api.Filter{})
	require.NoError(t, err)
	require.Equal(t, []string{"Dropped"}, cov.Missing)
	require.False(t, cov.Complete())
	require.Equal(t, len(vs), n)
}
