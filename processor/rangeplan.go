package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
)

// MaxPlanScan bounds the stream sequences a dry run reads.
const MaxPlanScan = 100_000

// Plan is the dry run of r: the committed events its selection picks,
// read from store, without running anything. The function's own aggregate
// types and event names narrow it further when it runs.
func Plan(ctx context.Context, js jetstream.JetStream, store eventstore.Store[jetstream.Msg], r api.Replay, limit int) (api.ReplayPlan, error) {
	if r.Rate == 0 {
		r.Rate = DefaultReplayRate
	}
	if err := ValidateReplay(&r); err != nil {
		return api.ReplayPlan{}, err
	}
	plan := api.ReplayPlan{Events: []api.PlannedEvent{}}
	add := func(st *eventstore.Stream) {
		for i := range st.Events {
			e := &st.Events[i]
			if !replayMatches(&r, st, e) {
				continue
			}
			plan.Count++
			if len(plan.Events) < limit {
				plan.Events = append(plan.Events, api.PlannedEvent{EventID: e.ID, Name: e.Name, AggregateType: st.Aggregate.Type,
					AggregateID: st.Aggregate.ID, Version: st.Version, Seq: st.Seq, CreateTime: st.CreateTime})
			}
		}
	}
	if r.ByAggregate() {
		a := eventstore.AggregateID{Context: r.Context, Type: r.AggregateType, ID: r.AggregateID}
		streams, err := store.Load(ctx, a, r.FromVersion)
		if err != nil && !errors.Is(err, eventstore.ErrNotFound) {
			return plan, fmt.Errorf("load %s: %w", a, err)
		}
		for i := range streams {
			if streams[i].Version > r.ToVersion {
				break
			}
			add(&streams[i])
			plan.Scanned = streams[i].Version
		}
		return plan, nil
	}
	end, err := streamEnd(ctx, js, store, r.Context)
	if err != nil {
		return plan, err
	}
	last := min(r.ToSeq, end)
	if last >= r.FromSeq && last-r.FromSeq >= MaxPlanScan {
		last, plan.Truncated = r.FromSeq+MaxPlanScan-1, true
	}
	for seq := r.FromSeq; seq <= last; seq++ {
		st, err := store.GetSeq(ctx, r.Context, seq)
		switch {
		case errors.Is(err, eventstore.ErrNotFound):
			continue
		case errors.Is(err, eventstore.ErrCorrupt), errors.Is(err, eventstore.ErrInvalid):
			continue
		case err != nil:
			return plan, fmt.Errorf("read sequence %d of context %s: %w", seq, r.Context, err)
		}
		plan.Scanned = seq
		add(&st)
	}
	return plan, nil
}

// streamEnd returns the last sequence of the stream of context; 0 if it
// does not exist.
func streamEnd(ctx context.Context, js jetstream.JetStream, store eventstore.Store[jetstream.Msg], boundedContext string) (uint64, error) {
	s, err := js.Stream(ctx, store.StreamName(boundedContext))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the stream of context %s: %w", boundedContext, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the stream of context %s: %w", boundedContext, err)
	}
	return info.State.LastSeq, nil
}
