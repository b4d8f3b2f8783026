package bench

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
)

// recordsPerWorker is how many records each worker cycles through, so no
// two workers touch the same record.
const recordsPerWorker = 64

func prepareCommand(ctx context.Context, env *Env) (*Pair, error) {
	st, closeFn, err := newStore(ctx, env, "command", aggregate.Context)
	if err != nil {
		return nil, err
	}
	svc := aggregate.NewService(st)
	workers := max(env.Concurrency, 1)
	id := func(side string, w, i int) string {
		return side + "-" + strconv.Itoa(w) + "-" + strconv.Itoa(i%recordsPerWorker)
	}
	for _, side := range []string{"raw", "amends"} {
		for w := range workers {
			for i := range recordsPerWorker {
				if _, err := svc.Execute(ctx, id(side, w, i), benchCreate(side, w, i), aggregate.Meta{}); err != nil {
					closeFn()
					return nil, err
				}
			}
		}
	}
	stream, err := env.JS.Stream(ctx, st.StreamName(aggregate.Context))
	if err != nil {
		closeFn()
		return nil, err
	}
	spec := aggregate.ApplyRetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}
	return &Pair{
		Close: closeFn,
		Raw: func(ctx context.Context, w, i int) error {
			subj, _ := st.Subject(aggregate.RecordAggregate(id("raw", w, i)))
			last, err := stream.GetLastMsgForSubject(ctx, subj)
			if err != nil {
				return err
			}
			m := nats.NewMsg(subj)
			m.Data = last.Data
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last.Sequence, 10))
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("raw-%d-%d-%s", w, i, env.Prefix))
			_, err = env.JS.PublishMsg(ctx, m)
			return err
		},
		Amends: func(ctx context.Context, w, i int) error {
			_, err := svc.Execute(ctx, id("amends", w, i), spec, aggregate.Meta{Actor: "bench"})
			return err
		},
	}, nil
}

func benchCreate(side string, w, i int) aggregate.CreateExecutionFailed {
	return aggregate.CreateExecutionFailed{
		EventID: aggregate.EventID{ID: fmt.Sprintf("evt-%s-%d-%d", side, w, i), Version: 1, Seq: 1,
			AggregateID: aggregate.WireAggregateID{ContextName: benchContext, AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}},
		Function:  aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: benchContext, ProcessorName: "Mailer", Name: "onOrderPlaced"},
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout", StackTrace: "main.send\n\tmailer.go:42"},
		ExecuteAt: 1735000000000,
	}
}
