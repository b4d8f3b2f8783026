package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
)

// priorityGroup is the priority group of pinned consumers.
const priorityGroup = "amends"

// DurableName returns the durable consumer name of processor in context:
// "amends_<context>_<processor>", on the context's stream. Renaming a
// processor therefore creates a new durable.
func DurableName(context, processor string) string {
	return "amends_" + context + "_" + processor
}

// ReplayDurableName returns the name of the replay consumer of context on
// the compensation stream: "amends_replay_<context>".
func ReplayDurableName(context string) string { return "amends_replay_" + context }

// consumerConfig is the durable consumer of group g.
func (p *Processor) consumerConfig(g *group) jetstream.ConsumerConfig {
	var subjects []string
	for t := range g.byType {
		subjects = append(subjects, p.store.FilterSubject(p.context, t))
	}
	slices.Sort(subjects)
	cfg := p.baseConfig(DurableName(p.context, g.name), subjects, p.o.maxAckPending)
	cfg.Description = fmt.Sprintf("amends processor %s of context %s", g.name, p.context)
	if p.o.deliverNew {
		cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	return cfg
}

// replayConfig is the context's consumer of the compensation records. It
// starts at the end of the stream when created: prepared attempts from
// before a service's first start time out and are prepared again by the
// scheduler, instead of a new service replaying the whole history.
func (p *Processor) replayConfig() jetstream.ConsumerConfig {
	subject := p.store.FilterSubject(aggregate.Context, aggregate.AggregateType)
	cfg := p.baseConfig(ReplayDurableName(p.context), []string{subject}, max(256, p.o.replayLanes*p.o.laneBuffer))
	cfg.Description = fmt.Sprintf("amends replays of context %s", p.context)
	cfg.DeliverPolicy = jetstream.DeliverNewPolicy
	return cfg
}

func (p *Processor) baseConfig(name string, subjects []string, maxAckPending int) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:        name,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        p.o.ackWait,
		MaxDeliver:     -1,
		FilterSubjects: subjects,
		MaxAckPending:  maxAckPending,
	}
	if len(subjects) == 1 {
		// The server's single-filter path is cheaper per message.
		cfg.FilterSubject, cfg.FilterSubjects = subjects[0], nil
	}
	if p.o.pinned {
		cfg.PriorityPolicy = jetstream.PriorityPolicyPinned
		cfg.PriorityGroups = []string{priorityGroup}
		cfg.PinnedTTL = p.o.ackWait
	}
	return cfg
}

// ensureConsumer creates the durable or updates it to cfg, keeping the
// start position of an existing one (JetStream cannot change it).
func (p *Processor) ensureConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	existing, err := p.js.Consumer(ctx, stream, cfg.Durable)
	switch {
	case err == nil:
		have := existing.CachedInfo().Config
		cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = have.DeliverPolicy, have.OptStartSeq, have.OptStartTime
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("look up consumer %s on %s: %w", cfg.Durable, stream, err)
	}
	c, err := p.js.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("create or update consumer %s on %s: %w", cfg.Durable, stream, err)
	}
	return c, nil
}
