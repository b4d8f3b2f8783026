package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errViewsRecreated: the views bucket was deleted and created again while
// the projector ran.
var errViewsRecreated = errors.New("the views bucket was created again; projecting every record again")

// DefaultViewsCheck is how often a running projector checks that the
// views bucket is still the one it projects into.
const DefaultViewsCheck = 30 * time.Second

// WithViewsCheck sets how often a running projector checks that the views
// bucket is the one its consumer projected into (default
// DefaultViewsCheck); d must be positive.
func WithViewsCheck(d time.Duration) ProjectorOption {
	return func(o *projectorOptions) error {
		if d <= 0 {
			return fmt.Errorf("views check interval must be positive, got %s: %w", d, ErrInvalidOption)
		}
		o.viewsCheck = d
		return nil
	}
}

// viewsCreated returns when the views bucket's stream was created (zero
// for a bucket that does not tell).
func (p *Projector) viewsCreated(ctx context.Context) (time.Time, error) {
	st, err := p.views.Status(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the status of the views bucket: %w", err)
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		return bs.StreamInfo().Created, nil
	}
	return time.Time{}, nil
}

// reprojectIfLost starts the consumer again from the stream's first
// message when the views bucket is younger than the consumer's progress:
// the bucket was deleted and created again (by hand, or by
// --repair-buckets) after the consumer acknowledged messages whose views
// it held, so those views are gone and the consumer would never deliver
// their messages again. Every record is then projected again; the views
// already there are skipped or brought forward as usual.
func (p *Projector) reprojectIfLost(ctx context.Context, stream string, cons jetstream.Consumer, viewsCreated time.Time) (jetstream.Consumer, error) {
	info := cons.CachedInfo()
	if info == nil || viewsCreated.IsZero() || !viewsCreated.After(info.Created) || info.AckFloor.Stream == 0 {
		return cons, nil
	}
	p.opts.logger.Warn("projector: the views bucket is younger than the projector's consumer, so the views of the records it projected are gone; projecting every record again",
		"consumer", p.opts.durable, "bucketCreated", viewsCreated, "consumerCreated", info.Created, "ackFloor", info.AckFloor.Stream)
	if err := p.js.DeleteConsumer(ctx, stream, p.opts.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("start consumer %s again: %w", p.opts.durable, err)
	}
	p.cache.clear()
	p.reprojected.Add(1)
	cons, err := p.js.CreateOrUpdateConsumer(ctx, stream, p.ConsumerConfig())
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", p.opts.durable, stream, err)
	}
	return cons, nil
}

// watchViews checks every viewsCheck that the views bucket is the one
// created at created, and cancels the consumption with errViewsRecreated
// when it is not (Run then sets the consumer up again, from the start).
func (p *Projector) watchViews(ctx context.Context, cancel context.CancelCauseFunc, created time.Time, done <-chan struct{}) {
	if created.IsZero() {
		return
	}
	t := time.NewTicker(p.opts.viewsCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		now, err := p.viewsCreated(ctx)
		if err != nil {
			p.opts.logger.Debug("projector: cannot check the views bucket", "err", err)
			continue
		}
		if !now.Equal(created) {
			cancel(errViewsRecreated)
			return
		}
	}
}
