// The records a drain prepares, its probes, and the replay room it waits for.

package scheduler

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
)

// drainRecords lists up to n records d drains, oldest failure first: FAILED
// records of its function with an automatic retry left (RECOVERABLE or
// UNKNOWN, retries below the limit) whose errorCode is CircuitOpen or
// whose last failure is within [From, To].
func (s *Scheduler) drainRecords(d Drain, n int) ([]projection.Item, error) {
	q := projection.Query{
		Filter: projection.Filter{FunctionContext: d.Function.Context, Processor: d.Function.Processor, Function: d.Function.Name, Status: aggregate.StatusFailed},
		Sort:   projection.Sort{Field: projection.SortExecuteAt},
		Limit:  projection.MaxLimit,
	}
	var out []projection.Item
	for len(out) < n {
		page, err := s.opts.drain.Records.List(q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if len(out) < n && drained(d, it) {
				out = append(out, it)
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return out, nil
}

func drained(d Drain, it projection.Item) bool {
	if !it.Recoverable.AutoRetried() || it.Retries >= it.MaxRetries {
		return false
	}
	return it.ErrorCode == circuit.ErrorCode || (it.ExecuteAt >= d.From && it.ExecuteAt <= d.To)
}

// probe prepares the replay of c's oldest record as its probe, when the
// cool-down passed a grace ago and no call claimed the probe (or, half-open,
// no call took the next probe), and the last probe it prepared has an
// outcome.
func (s *Scheduler) probe(ctx context.Context, c circuit.State, d Drain, now time.Time) error {
	pol := s.opts.drain.Policy
	ms := now.UnixMilli()
	grace := pol.ProbeGrace.Milliseconds()
	switch {
	case c.Forced:
		return nil
	case c.Phase == circuit.Open && ms < c.Until+grace:
		return nil
	case c.Phase == circuit.HalfOpen && !c.Probeable(now):
		return nil
	case c.Phase == circuit.Open && d.ProbeAt != 0 && ms < d.ProbeAt+grace:
		return nil // the last probe failed a moment ago: the circuit's cool-down paces the next
	case d.Probe != nil && outcome(s.opts.drain.Records, *d.Probe, now) == outcomePending:
		return nil
	}
	probe := Drain{Function: c.Function, From: 0, To: math.MaxInt64}
	items, err := s.drainRecords(probe, 1)
	if err != nil || len(items) == 0 {
		return err
	}
	it := items[0]
	batch, err := s.prepareAll(ctx, items, aggregate.PrepareCompensation{}, func(projection.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("probe of the circuit of %s, open since %s", c.Function, stamp(c.Since)),
			CommandID: fmt.Sprintf("circuit-probe:%s:%d", it.ID, it.Retries)}
	})
	if len(batch) == 0 {
		return err
	}
	d.Probe, d.ProbeAt = &batch[0], ms
	d.Probes++
	s.drainStats.probes.Add(1)
	s.opts.logger.Info("scheduler: no call probed the circuit after its cool-down; replaying its oldest record as the probe",
		"function", c.Function.String(), "record", it.ID)
	return s.putDrain(ctx, d, now)
}

func clipNote(s string) string {
	if len(s) <= 300 {
		return s
	}
	n := 300
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// ReplayRoom returns the ReplayCapacity of the replay consumers on the
// compensation stream stream of js (jsstore.Store.StreamName of
// aggregate.Context): the consumer's MaxAckPending less the messages it
// holds and those waiting for it. A context without a replay consumer has
// no room: its replays would not run.
func ReplayRoom(js jetstream.JetStream, stream string) ReplayCapacity {
	return func(ctx context.Context, context string) (int, error) {
		c, err := js.Consumer(ctx, stream, processor.ReplayDurableName(context))
		if err != nil {
			return 0, err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.Config.MaxAckPending - info.NumAckPending - int(min(info.NumPending, 1<<30)), nil
	}
}
