package recorder

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/processor"
)

// MaxFinalFailureFunctions caps the functions FinalFailures counts one by
// one; the failures of any further function are counted under
// OtherFunctions, so a metric labelled by function stays bounded.
const MaxFinalFailureFunctions = 200

// OtherFunctions is the function name of the failures counted beyond
// MaxFinalFailureFunctions.
const OtherFunctions = "_other"

// AttemptCounts count the attempts this recorder wrote to records, by
// outcome: first failures (recorded), replays that failed or succeeded
// (applied), and replay results the record had moved past (stale).
type AttemptCounts struct {
	FirstFailure atomic.Uint64
	Failed       atomic.Uint64
	Succeeded    atomic.Uint64
	Stale        atomic.Uint64
}

// FinalFailures count, per function ("Processor.Name"), the failures this
// recorder wrote that left their record open with no automatic retry
// (aggregate.FinalFailure: retries exhausted or UNRECOVERABLE). Safe for
// concurrent use.
type FinalFailures struct {
	mu sync.Mutex
	n  map[string]uint64
}

func (f *FinalFailures) add(function string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = make(map[string]uint64)
	}
	if _, ok := f.n[function]; !ok && len(f.n) >= MaxFinalFailureFunctions {
		function = OtherFunctions
	}
	f.n[function]++
}

// Counts returns a copy of the counts by function.
func (f *FinalFailures) Counts() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.n)
}

// Total returns the final failures of every function.
func (f *FinalFailures) Total() uint64 {
	var n uint64
	for _, v := range f.Counts() {
		n += v
	}
	return n
}

// attempted counts an attempt the record took (not a duplicate command).
func (m *Metrics) attempted(x processor.Execution, res aggregate.Result) {
	if res.Duplicate {
		return
	}
	switch {
	case x.Err == nil:
		m.Attempts.Succeeded.Add(1)
	case x.Compensation == nil:
		m.Attempts.FirstFailure.Add(1)
	default:
		m.Attempts.Failed.Add(1)
	}
	if x.Err != nil && x.Function != nil && aggregate.FinalFailure(&res.State) != "" {
		m.Final.add(x.Function.ProcessorName + "." + x.Function.Name)
	}
}
