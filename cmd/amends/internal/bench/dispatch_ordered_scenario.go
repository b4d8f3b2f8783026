package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// A dispatch-ordered operation is a dispatch operation (see
// prepareDispatch) whose function is Ordered, against the same processor
// and function without the option: the cost of the option, whose
// progress check and write per (function, aggregate) are on the path.
// Each message is the first version of a new aggregate, so every one
// creates its progress key.
func prepareDispatchOrdered(ctx context.Context, env *Env) (_ *Pair, err error) {
	var opened undo
	defer opened.onError(&err)
	st, closeFn, err := newStore(ctx, env, "dispatch_ordered")
	if err != nil {
		return nil, err
	}
	opened.add(closeFn)
	// The buckets of holds and progress are the installation's; delete them
	// afterwards only if this run created them.
	var created []string
	for _, b := range []string{processor.HoldBucket, processor.ProgressBucket} {
		if _, err := env.JS.KeyValue(ctx, b); errors.Is(err, jetstream.ErrBucketNotFound) {
			created = append(created, b)
		}
	}
	rec, err := recorder.New(aggregate.NewService(st))
	if err != nil {
		return nil, err
	}
	records := aggregate.NewService(st)
	batch := dispatchBatch(env)
	last := &lastStop{}
	typ := func(side string, w, i int) string { return fmt.Sprintf("%s%d_%d", side[:1], w, i) }
	run := func(ctx context.Context, side string, w, i int, opts []processor.Option, fopts []processor.FunctionOption) error {
		p, err := newDispatchProcessor(ctx, env, st, "dispatch_ordered", opts...)
		if err != nil {
			return err
		}
		return last.runProcessor(ctx, env, st, w, p, onPlaced("P"+typ(side, w, i), typ(side, w, i)), succeed, fopts, p.Metrics().Acked.Load, batch)
	}
	return &Pair{
		PerOp: batch,
		Close: func() {
			last.all()
			opened.run()
			for _, b := range created {
				_ = env.JS.DeleteKeyValue(context.Background(), b)
			}
		},
		Before: func(ctx context.Context, side string, w, i int) error {
			last.stop(w)
			return publishBatch(ctx, env.JS, st, typ(side, w, i), batch)
		},
		Raw: func(ctx context.Context, w, i int) error {
			return run(ctx, "raw", w, i, nil, nil)
		},
		Amends: func(ctx context.Context, w, i int) error {
			return run(ctx, "amends", w, i, []processor.Option{processor.WithRecorder(rec), processor.WithRecords(records)},
				[]processor.FunctionOption{processor.Ordered()})
		},
	}, nil
}
