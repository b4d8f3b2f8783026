package recorder

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
)

// runOf is the attempt's run as the record stores it: the execution's
// start, instance and build, and the trace id of the span in ctx (the
// function call's, as the processor passes it), cleaned so that Decide
// accepts it. Nil when nothing is known.
func runOf(ctx context.Context, x processor.Execution, executeAt int64) *aggregate.Run {
	r := aggregate.Run{Instance: x.Instance, Build: x.Build}
	if !x.StartedAt.IsZero() {
		r.StartedAt = x.StartedAt.UnixMilli()
	}
	if id := trace.SpanContextFromContext(ctx).TraceID(); id.IsValid() {
		r.TraceID = id.String()
	}
	return aggregate.RunOf(r.Clean(executeAt))
}
