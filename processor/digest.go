package processor

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/amends-dev/amends/internal/wait"
)

// DefaultFailureSummary is how often a processor logs, at Info, one line
// per function whose failures it recorded since the last line.
const DefaultFailureSummary = time.Minute

// digest counts the recorded failures of each function between two
// summary lines. A recorded failure is in amends' hands: each one is
// logged at Debug only, and the operator reads the counts at Info once a
// period instead of a line per failure. Safe for concurrent use.
type digest struct {
	mu  sync.Mutex
	fns map[string]*digestEntry // by processor.function
}

type digestEntry struct {
	processor, function string
	failed, refused     int    // recorded failures; of them, refused by the circuit
	lastErr             string // the last failure's error
}

// add counts one recorded failure of processor.function; refused says the
// circuit refused it (no call was made).
func (d *digest) add(processor, function, errMsg string, refused bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fns == nil {
		d.fns = map[string]*digestEntry{}
	}
	k := processor + "." + function
	e := d.fns[k]
	if e == nil {
		e = &digestEntry{processor: processor, function: function}
		d.fns[k] = e
	}
	e.failed++
	if refused {
		e.refused++
		return
	}
	e.lastErr = errMsg
}

// take returns the counts since the last take, by function name, and
// starts new ones.
func (d *digest) take() []digestEntry {
	d.mu.Lock()
	fns := d.fns
	d.fns = nil
	d.mu.Unlock()
	out := make([]digestEntry, 0, len(fns))
	for _, e := range fns {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].processor+"."+out[i].function < out[j].processor+"."+out[j].function
	})
	return out
}

// summarize logs the digest every period until ctx ends, and once more
// then, so that no count is lost at a stop.
func (p *Processor) summarize(ctx context.Context) {
	if p.o.failureSummary <= 0 {
		return
	}
	flush := func() {
		for _, e := range p.failures.take() {
			attrs := []any{"context", p.context, "processor", e.processor, "function", e.function,
				"recorded", e.failed, "refusedByCircuit", e.refused, "period", p.o.failureSummary}
			if e.lastErr != "" {
				attrs = append(attrs, "lastErr", e.lastErr)
			}
			p.o.logger.Info("amends processor: failures recorded", attrs...)
		}
	}
	wait.Every(ctx, p.o.failureSummary, flush)
	flush()
}

// WithFailureSummary sets how often the processor logs, at Info, one line
// per function with the failures it recorded in the period (how many, how
// many of them the circuit refused, the last error); default
// DefaultFailureSummary, 0 turns the lines off. Each recorded failure is
// logged at Debug only: amends has it in hand, and a line per failure
// would drown the log under load. Failures that were not recorded stay
// at Warn and Error, one line each. A negative d is refused.
func WithFailureSummary(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return invalidOption("failure summary period must be >= 0, got %s", d)
		}
		o.failureSummary = d
		return nil
	}
}

// debugEnabled says whether l logs at Debug (checked before building a
// line's attributes).
func debugEnabled(ctx context.Context, l *slog.Logger) bool { return l.Enabled(ctx, slog.LevelDebug) }
