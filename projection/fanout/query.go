package fanout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/projection/index"
)

// QuerierConfig configures a Querier.
type QuerierConfig struct {
	// Plan returns the plan in force: the instances to ask, and the
	// partitions an answer must cover. Required.
	Plan func(ctx context.Context) (partition.Plan, error)
	// Members, if set, returns the live instances: they are asked too,
	// though the plan places nothing on them, because each names the
	// processors it saw records of that the plan does not place yet (a
	// plan made before those records, or the empty plan before the first
	// one).
	Members func(ctx context.Context) ([]string, error)
	// Processors, if set, returns the processors that have records, as
	// this instance knows them (projection.Index.Processors: every
	// processor's key, which the projector writes with its first view).
	// A processor the plan does not place and no answer holds is missing,
	// whatever the members say: a member names the processors it saw not
	// placed only as of its last load, so a plan that stops placing a
	// processor (its holder died before it reported it) would otherwise go
	// unnoticed until the next one places it again.
	Processors func() []string
	// Prefix starts the subjects (default DefaultPrefix).
	Prefix string
	// Timeout bounds the wait for each instance's reply (default 5s).
	Timeout time.Duration
}

// Querier asks the instances that hold the partitions and merges their
// answers. Safe for concurrent use.
type Querier struct {
	nc  *nats.Conn
	cfg QuerierConfig
}

// Coverage says what an answer covers. The answer holds the records of
// every partition of the plan but those in Missing.
type Coverage struct {
	// Missing are the partitions of the plan no instance answered for,
	// and the processors the plan does not place yet that an instance
	// saw records of, sorted.
	Missing []string `json:"missing,omitempty"`
	// Unanswered are the instances that did not answer, and why.
	Unanswered []Unanswered `json:"unanswered,omitempty"`
	// Unseen: no instance answered, so none could name the processors
	// the plan does not place yet; the answer may lack records though
	// Missing is empty.
	Unseen bool `json:"unseen,omitempty"`
}

// Complete reports whether the answer covers every partition.
func (c Coverage) Complete() bool { return len(c.Missing) == 0 && !c.Unseen }

// Unanswered is an instance that did not answer, and why.
type Unanswered struct {
	Instance string `json:"instance"`
	Reason   string `json:"reason"`
}

// NewQuerier returns a Querier over nc. A missing Plan or a bound out of
// range is an error matching ErrInvalidOption. It does no I/O.
func NewQuerier(nc *nats.Conn, cfg QuerierConfig) (*Querier, error) {
	cfg.Prefix = cmpOr(cfg.Prefix, DefaultPrefix)
	cfg.Timeout = cmpOr(cfg.Timeout, 5*time.Second)
	switch {
	case nc == nil || cfg.Plan == nil:
		return nil, fmt.Errorf("querier: a connection and Plan are required: %w", ErrInvalidOption)
	case cfg.Timeout < 0 || cfg.Timeout > time.Minute:
		return nil, fmt.Errorf("querier: timeout must be positive and at most 1m, got %s: %w", cfg.Timeout, ErrInvalidOption)
	}
	return &Querier{nc: nc, cfg: cfg}, nil
}

// List returns the page one index holding every record would return for
// q, merged from the instances' pages, and what it covers. Errors: an
// invalid query (matching index.ErrInvalidQuery, before anything is
// sent), a plan that cannot be read, or replies that claim one partition
// twice (ErrBadReply). An instance that does not answer is not an error:
// Coverage says which partitions the page lacks.
func (q *Querier) List(ctx context.Context, query api.Query) (api.Page, Coverage, error) {
	if _, err := index.MergeList(query, nil); err != nil {
		return api.Page{}, Coverage{}, err
	}
	replies, cov, err := q.ask(ctx, opList, query)
	if err != nil {
		return api.Page{}, cov, err
	}
	pages := make([]api.Page, len(replies))
	for i := range replies {
		pages[i] = *replies[i].Page
	}
	page, err := index.MergeList(query, pages)
	return page, cov, err
}

// Count returns the records that match f, added over the instances, and
// what they cover. Errors as List.
func (q *Querier) Count(ctx context.Context, f api.Filter) (int, Coverage, error) {
	replies, cov, err := q.ask(ctx, opCount, api.Query{Filter: f})
	n := 0
	for i := range replies {
		n += *replies[i].Count
	}
	return n, cov, err
}

// Summary returns the summary of the records that match f, without its
// fingerprint groups (as an index's Summary), merged over the instances,
// and what it covers. Errors as List.
func (q *Querier) Summary(ctx context.Context, f api.Filter) (api.Summary, Coverage, error) {
	replies, cov, err := q.ask(ctx, opSummary, api.Query{Filter: f})
	if err != nil {
		return api.Summary{}, cov, err
	}
	sums := make([]api.Summary, len(replies))
	for i := range replies {
		sums[i] = *replies[i].Summary
	}
	sum := index.MergeSummary(sums)
	sum.Fingerprints = nil
	return sum, cov, nil
}

// FingerprintSummary returns the fingerprint groups of the records that
// match f, merged over the instances, and what they cover. Errors as List.
func (q *Querier) FingerprintSummary(ctx context.Context, f api.Filter) ([]api.FingerprintGroup, Coverage, error) {
	replies, cov, err := q.ask(ctx, opFingerprints, api.Query{Filter: f})
	if err != nil {
		return nil, cov, err
	}
	parts := make([][]api.FingerprintGroup, len(replies))
	for i := range replies {
		parts[i] = *replies[i].Fingerprints
	}
	return index.MergeFingerprints(parts), cov, nil
}

// ask sends op for query to every instance the plan places partitions on,
// at once, and returns the replies that answered and what they cover.
func (q *Querier) ask(ctx context.Context, op string, query api.Query) ([]reply, Coverage, error) {
	if err := index.CheckFilter(query.Filter); err != nil {
		return nil, Coverage{}, err
	}
	data, err := jsonv2.Marshal(request{Op: op, Query: query})
	if err != nil {
		return nil, Coverage{}, fmt.Errorf("encode the request: %w", err)
	}
	if len(data) > MaxRequestBytes {
		return nil, Coverage{}, fmt.Errorf("the query is %d bytes encoded, over the limit of %d: %w", len(data), MaxRequestBytes, index.ErrInvalidQuery)
	}
	plan, instances, err := q.instances(ctx)
	if err != nil {
		return nil, Coverage{}, err
	}
	results := make([]result, len(instances))
	var wg sync.WaitGroup
	for i, in := range instances {
		wg.Go(func() { results[i] = q.askOne(ctx, in, op, data) })
	}
	wg.Wait()
	var known []string
	if q.cfg.Processors != nil {
		known = q.cfg.Processors()
	}
	return cover(plan, results, known)
}

// instances returns the plan in force and the instances to ask: those it
// places partitions on and the live members, sorted.
func (q *Querier) instances(ctx context.Context) (partition.Plan, []string, error) {
	plan, err := q.cfg.Plan(ctx)
	if err != nil {
		return plan, nil, fmt.Errorf("read the partitions' plan: %w", err)
	}
	out := owners(plan)
	if q.cfg.Members != nil {
		members, err := q.cfg.Members(ctx)
		if err != nil {
			return plan, nil, fmt.Errorf("list the live instances: %w", err)
		}
		out = append(out, members...)
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return plan, out, nil
}

// result is one instance's reply, or why there is none.
type result struct {
	instance string
	reply    reply
	err      error
}

// askOne sends data to instance and reads its reply to op.
func (q *Querier) askOne(ctx context.Context, instance, op string, data []byte) result {
	res := result{instance: instance}
	subject, err := subjectOf(q.cfg.Prefix, instance)
	if err != nil {
		res.err = err
		return res
	}
	// An instance whose partitions changed while it answered is asked
	// once more.
	for range 2 {
		res.reply, res.err = q.request(ctx, subject, op, data, q.cfg.Timeout)
		if res.err != nil || res.reply.Error == nil || res.reply.Error.Kind != errMoved {
			break
		}
	}
	return res
}

// request sends data to subject and reads the reply to op, waiting for it
// at most timeout.
func (q *Querier) request(ctx context.Context, subject, op string, data []byte, timeout time.Duration) (reply, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := q.nc.RequestWithContext(rctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return reply{}, errors.New("no responder: the instance is not running or not reachable")
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return reply{}, fmt.Errorf("no reply within %s", timeout)
	case err != nil:
		return reply{}, err
	}
	body, err := decodeBody(m)
	if err != nil {
		return reply{}, err
	}
	return readReply(body, op)
}

// cover returns the replies that answered, and which partitions of plan
// none of them holds in full. An invalid query is the asker's error; two
// replies that hold a record in common (one partition, or overlapping
// parts of two splits, while the instances act on two plans) cannot be
// added, and are an error.
func cover(plan partition.Plan, results []result, known []string) ([]reply, Coverage, error) {
	var cov Coverage
	var replies []reply
	claims := claims{by: map[string][]claim{}, held: map[string]*[partition.Slots]bool{}}
	for _, r := range results {
		switch {
		case r.err != nil:
			cov.Unanswered = append(cov.Unanswered, Unanswered{r.instance, r.err.Error()})
		case r.reply.Error != nil && r.reply.Error.Kind == errInvalidQuery:
			return nil, cov, fmt.Errorf("instance %q: %s: %w", r.instance, r.reply.Error.Message, index.ErrInvalidQuery)
		case r.reply.Error != nil:
			cov.Unanswered = append(cov.Unanswered, Unanswered{r.instance, r.reply.Error.Kind + ": " + r.reply.Error.Message})
		default:
			if err := claims.add(r.instance, r.reply.Partitions); err != nil {
				return nil, cov, err
			}
			replies = append(replies, r.reply)
		}
	}
	cov.Missing = claims.missing(plan, replies, known)
	cov.Unseen = len(replies) == 0
	return replies, cov, nil
}

// claims are the partitions the replies hold, by processor.
type claims struct {
	by   map[string][]claim
	held map[string]*[partition.Slots]bool // the slots answered for
}

type claim struct{ id, instance string }

// add claims instance's partitions ids; one that shares a slot with
// another instance's is an error.
func (c *claims) add(instance string, ids []string) error {
	for _, id := range ids {
		proc, slots, _ := partition.SlotsOfID(id) // readReply checked it
		for _, o := range c.by[proc] {
			if partition.Overlap(o.id, id) {
				return fmt.Errorf("instances %q and %q both answer for the records of partition %q (%q): %w", o.instance, instance, id, o.id, ErrBadReply)
			}
		}
		c.by[proc] = append(c.by[proc], claim{id, instance})
		if c.held[proc] == nil {
			c.held[proc] = new([partition.Slots]bool)
		}
		for _, s := range slots {
			c.held[proc][s] = true
		}
	}
	return nil
}

// missing returns the partitions of plan whose slots the claims do not
// all hold, and the processors a reply saw, or known has, that the plan
// does not place yet and the claims do not hold whole (in no one's index,
// or in parts of an older plan: missing until the next plan places
// them), sorted.
func (c *claims) missing(plan partition.Plan, replies []reply, known []string) []string {
	var out []string
	for id := range plan.Owners {
		proc, slots, ok := plan.SlotsOf(id)
		if !ok || c.held[proc] == nil || slices.ContainsFunc(slots, func(s int) bool { return !c.held[proc][s] }) {
			out = append(out, id)
		}
	}
	unplaced := func(proc string) {
		if _, placed := plan.Owners[plan.Of(proc, "")]; !placed && !c.whole(proc) && !slices.Contains(out, proc) {
			out = append(out, proc)
		}
	}
	for _, r := range replies {
		for _, proc := range r.Unplaced {
			unplaced(proc)
		}
	}
	for _, proc := range known {
		unplaced(proc)
	}
	slices.Sort(out)
	return out
}

// whole reports whether the claims hold every slot of processor: an
// instance that still holds parts of a processor the plan no longer
// places holds only those.
func (c *claims) whole(processor string) bool {
	held := c.held[processor]
	return held != nil && !slices.Contains(held[:], false)
}

// owners returns the instances plan places partitions on, sorted.
func owners(plan partition.Plan) []string {
	var out []string
	for _, in := range plan.Owners {
		out = append(out, in)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
