package processor

import (
	"context"

	"github.com/google/uuid"
)

// An attempt's run (beyond Wow) is when it started and which instance and
// build ran it; the recorder stores it with the outcome (aggregate.Run).
// call notes the start on the Delivery at the first call (immediate
// retries belong to the same attempt) and execution copies it.

// runRecorder fills in an execution's run (start, instance, build) before
// handing it to the configured recorder.
type runRecorder struct {
	next            FailureRecorder
	instance, build string
}

func (r runRecorder) Record(ctx context.Context, x Execution) (Outcome, error) {
	if x.Instance == "" {
		x.Instance, x.Build = r.instance, r.build
	}
	return r.next.Record(ctx, x)
}

// Instance is the id of this processor instance, as the build registry
// and the records' attempt runs show it. Safe for concurrent use.
func (p *Processor) Instance() string { return p.instance }

// identify names the instance and wraps the recorder to fill in runs.
func (p *Processor) identify() {
	p.instance, p.build = uuid.NewString(), BinaryBuild()
	if p.o.build != nil {
		p.instance, p.build = p.o.build.instance, p.o.build.build
	}
	p.describer, _ = p.o.recorder.(FailureDescriber)
	if p.o.recorder != nil {
		p.o.recorder = runRecorder{next: p.o.recorder, instance: p.instance, build: p.build.String()}
	}
}
