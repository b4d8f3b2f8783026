// The records a drain prepares, its probes, and the replay room it waits for.

package scheduler

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/processor"
)

// drainRecords lists up to n records d drains, in the order they are
// drained: first the FAILED records of its function that the circuit
// refused (errorCode CircuitOpen), oldest first, whatever their retries
// and classification (a refusal is not an attempt: it never tried the
// event); then those retried automatically (RECOVERABLE or UNKNOWN) whose
// last failure is within [From, To], oldest first, including those whose
// retries ran out during the incident (force-prepared).
func (s *Scheduler) drainRecords(d circuit.Drain, n int) ([]api.Item, error) {
	out, err := s.functionRecords(d.Function, circuit.ErrorCode, n, func(it api.Item) bool { return refused(it) })
	if err != nil || len(out) >= n {
		return out, err
	}
	more, err := s.functionRecords(d.Function, "", n-len(out), func(it api.Item) bool { return inIncident(d, it) })
	return append(out, more...), err
}

// inIncident reports whether it failed within d's incident for a real
// reason and is retried automatically (its retries may have run out
// during the incident).
func inIncident(d circuit.Drain, it api.Item) bool {
	return !refused(it) && it.Recoverable.AutoRetried() && it.ExecuteAt >= d.From && it.ExecuteAt <= d.To
}

// functionRecords lists up to n FAILED records of f (with errorCode code
// when not empty) that keep says to keep, oldest failure first.
func (s *Scheduler) functionRecords(f circuit.Function, code string, n int, keep func(api.Item) bool) ([]api.Item, error) {
	q := api.Query{
		Filter: api.Filter{FunctionContext: f.Context, Processor: f.Processor, Function: f.Name, Status: aggregate.StatusFailed, ErrorCode: code},
		Sort:   api.Sort{Field: api.SortExecuteAt},
		Limit:  api.MaxLimit,
	}
	var out []api.Item
	for len(out) < n {
		page, err := s.opts.drain.Records.List(q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if len(out) < n && keep(it) {
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

// probeRecord chooses the record to probe c's circuit with, when no call
// probed it after its cool-down: the oldest record the circuit refused
// (its event was never tried, so its replay fails only if the dependency
// does); or, when the incident left none, the record of the incident due
// for a retry that failed last (the closest to the trip, an outage's
// victim more likely than not, since the circuit opens only when most
// distinct events fail). Never the last probe's record.
func (s *Scheduler) probeRecord(c circuit.State, d circuit.Drain, now time.Time) (api.Item, bool, error) {
	last := ""
	if d.Probe != nil {
		last = d.Probe.ID
	}
	items, err := s.functionRecords(c.Function, circuit.ErrorCode, 1, func(it api.Item) bool { return refused(it) && it.ID != last })
	if err != nil || len(items) > 0 {
		return first(items), len(items) > 0, err
	}
	window := circuit.Drain{From: c.Incident.From, To: now.UnixMilli()}
	if window.From == 0 {
		window.From = window.To
	}
	var best api.Item
	_, err = s.functionRecords(c.Function, "", math.MaxInt, func(it api.Item) bool {
		if inIncident(window, it) && retriesLeft(it) && it.ID != last && it.NextRetryAt <= now.UnixMilli() && it.ExecuteAt >= best.ExecuteAt {
			best = it
		}
		return false
	})
	return best, best.ID != "", err
}

func first(items []api.Item) api.Item {
	if len(items) == 0 {
		return api.Item{}
	}
	return items[0]
}

// probe prepares the replay of a record (probeRecord) as c's probe, when
// the decider says one is due (circuit.Drain.ProbeDue). With the circuits' store it claims the probe for that
// record first, so that its replay is the probe whichever instance runs
// it; with no record to probe with, it half-opens the circuit, so that
// the next call probes (circuit.IdleTick). Without the store only a
// refused record is replayed: its replay claims the probe itself.
func (s *Scheduler) probe(ctx context.Context, c circuit.State, d circuit.Drain, now time.Time) error {
	dc := s.opts.drain
	pol := dc.Policy
	c, err := s.freeSilentProbe(ctx, c, d, now)
	if err != nil {
		return err
	}
	if !d.ProbeDue(c, now, pol.ProbeGrace, d.Probe != nil && outcome(dc.Records, *d.Probe, now) == outcomePending) {
		return nil
	}
	it, ok, err := s.probeRecord(c, d, now)
	if err != nil {
		return err
	}
	if !ok || (dc.Store == nil && !refused(it)) {
		return s.halfOpenIdle(ctx, c, now)
	}
	if dc.Store != nil {
		claim := circuit.Claim{Instance: Actor, ID: uuid.NewString(), Event: it.EventID, Record: it.ID}
		st, _, changed, err := dc.Store.Update(ctx, c.Function, func(cur circuit.State) (circuit.State, bool) {
			return circuit.Evolve(cur, now, dc.CircuitPolicy, claim)
		})
		if err != nil || !changed || st.Probe == nil || st.Probe.ID != claim.ID {
			return err // a call claimed it meanwhile
		}
	}
	batch, err := s.prepareAll(ctx, []api.Item{it}, prepareOrForce, func(api.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("probe of the circuit of %s, open since %s", c.Function, stamp(c.Since)),
			CommandID: fmt.Sprintf("circuit-probe:%s:%d", it.ID, it.Retries)}
	})
	if len(batch) == 0 {
		return err
	}
	d = d.Probed(batch[0], now)
	s.drainStats.probes.Add(1)
	what := "a record its circuit refused"
	if !refused(it) {
		what = "the last record of the incident due for a retry (none was refused)"
	}
	s.opts.logger.Info("scheduler: no call probed the circuit after its cool-down; replaying "+what+" as the probe",
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

// freeSilentProbe frees the probe of c claimed for the drain's record
// when that record has an outcome and the claim is still there: its
// replay did not run as the probe (refused, or its result said nothing of
// the dependency). It returns the circuit as it is then.
func (s *Scheduler) freeSilentProbe(ctx context.Context, c circuit.State, d circuit.Drain, now time.Time) (circuit.State, error) {
	dc := s.opts.drain
	if c.Phase != circuit.HalfOpen || c.Probe == nil || d.Probe == nil || c.Probe.Record != d.Probe.ID || dc.Store == nil ||
		outcome(dc.Records, *d.Probe, now) == outcomePending {
		return c, nil
	}
	// The record chosen as the probe has an outcome, and the claim is
	// still there: its replay did not run as the probe (refused, or
	// its result said nothing of the dependency). Free the probe.
	id := c.Probe.ID
	st, _, _, err := dc.Store.Update(ctx, c.Function, func(cur circuit.State) (circuit.State, bool) {
		return circuit.Evolve(cur, now, dc.CircuitPolicy, circuit.ProbeSilence{ID: id})
	})
	if err != nil {
		return c, err
	}
	return st, nil
}

// halfOpenIdle half-opens c, open past its cool-down with no record that
// can probe it, so that the next call probes.
func (s *Scheduler) halfOpenIdle(ctx context.Context, c circuit.State, now time.Time) error {
	dc := s.opts.drain
	if dc.Store == nil || c.Phase != circuit.Open {
		return nil
	}
	_, _, changed, err := dc.Store.Update(ctx, c.Function, func(cur circuit.State) (circuit.State, bool) {
		return circuit.Evolve(cur, now, dc.CircuitPolicy, circuit.IdleTick{Instance: Actor})
	})
	if err == nil && changed {
		s.opts.logger.Info("scheduler: no call probed the circuit after its cool-down and no record can probe it; half-opened it, so that the next call probes",
			"function", c.Function.String())
	}
	return err
}
