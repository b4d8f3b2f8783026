package recorder_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rules"
)

// accept is an Executor that accepts every command at once: the benchmark
// measures the recorder's own work per failure (details, fingerprint,
// rule matching), not the store.
type accept struct{}

func (accept) Execute(context.Context, string, aggregate.Command, aggregate.Meta) (aggregate.Result, error) {
	return aggregate.Result{}, nil
}

// BenchmarkRecordWithRules records a failure with a stack trace with no
// rules and with 1 000 rules loaded (none matching).
func BenchmarkRecordWithRules(b *testing.B) {
	list := make([]api.Rule, 0, 1000)
	for i := range 1000 {
		r := api.Rule{ID: fmt.Sprintf("r-%012x", i), Action: rules.MarkUnrecoverable, CreatedAt: int64(i)}
		if i%2 == 0 {
			r.Match.Fingerprint = fmt.Sprintf("fp1-%016x", i)
		} else {
			r.Match = api.RuleMatch{FunctionContext: "shop", Processor: fmt.Sprintf("P%d", i), Function: "charge", ErrorCode: "X"}
		}
		list = append(list, r)
	}
	err := crdb.Newf("charge of order %d failed: card declined", 42)
	x := processor.Execution{EventID: eventID, Function: &fn, Err: err, ExecuteAt: time.UnixMilli(t0)}
	for _, c := range []struct {
		name string
		opts []recorder.Option
	}{
		{"rules=0", nil},
		{"rules=1000", []recorder.Option{recorder.WithRules(rules.NewSet(list))}},
	} {
		rec, rerr := recorder.New(accept{}, c.opts...)
		if rerr != nil {
			b.Fatal(rerr)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if out, _ := rec.Record(context.Background(), x); out != processor.OutcomeRecorded {
					b.Fatalf("outcome %s", out)
				}
			}
		})
	}
}
