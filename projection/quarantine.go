package projection

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/quarantine"
)

// WithQuarantine sets where the projector records the messages it can
// never project (default: a quarantine.Quarantine on the projector's
// JetStream, with the compensation stream's replica count). Share one with
// the other consumers of a process to count them together.
func WithQuarantine(q *quarantine.Quarantine) ProjectorOption {
	return func(o *projectorOptions) error {
		if q == nil {
			return fmt.Errorf("quarantine is nil: %w", ErrInvalidOption)
		}
		o.quarantine = q
		return nil
	}
}

// WithRetry sets how a message that failed with an error that may be
// transient is redelivered and when it is quarantined instead (default:
// quarantine.DefaultRetry, starting at the nak delay).
func WithRetry(r quarantine.Retry) ProjectorOption {
	return func(o *projectorOptions) error {
		if r.First < 0 || r.Max < 0 {
			return fmt.Errorf("retry delays must not be negative, got first %s and max %s: %w", r.First, r.Max, ErrInvalidOption)
		}
		o.retry = r
		return nil
	}
}

// Quarantine returns where the projector records the messages it
// terminates.
func (p *Projector) Quarantine() *quarantine.Quarantine { return p.opts.quarantine }

func (o *projectorOptions) defaultQuarantine(js jetstream.JetStream, store eventstore.Store[jetstream.Msg]) error {
	if o.retry.First == 0 {
		o.retry.First = o.nakDelay
	}
	if o.quarantine != nil {
		return nil
	}
	replicas := max(store.Replicas(), 1)
	q, err := quarantine.New(js, quarantine.WithReplicas(replicas), quarantine.WithLogger(o.logger, 0))
	if err != nil {
		return fmt.Errorf("projector quarantine: %v: %w", err, ErrInvalidOption)
	}
	o.quarantine = q
	return nil
}
