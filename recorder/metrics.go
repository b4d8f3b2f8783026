package recorder

import (
	"sync/atomic"

	"github.com/amends-dev/amends/processor"
)

// Metrics count a Recorder's outcomes and send retries. They only grow;
// read them with Load.
type Metrics struct {
	Recorded        atomic.Uint64
	AlreadyRecorded atomic.Uint64
	Applied         atomic.Uint64
	Stale           atomic.Uint64
	Unrecorded      atomic.Uint64
	Waived          atomic.Uint64
	RecordingFailed atomic.Uint64
	// SendRetries counts sends retried after a failed send.
	SendRetries atomic.Uint64
	// RuleMatches counts new failures an operator rule acted on.
	RuleMatches atomic.Uint64
	// Attempts counts the attempts written to records, by outcome.
	Attempts AttemptCounts
	// Final counts the final failures (no automatic retry left) by function.
	Final FinalFailures
}

func (m *Metrics) counter(o processor.Outcome) *atomic.Uint64 {
	switch o {
	case processor.OutcomeRecorded:
		return &m.Recorded
	case processor.OutcomeAlreadyRecorded:
		return &m.AlreadyRecorded
	case processor.OutcomeApplied:
		return &m.Applied
	case processor.OutcomeStale:
		return &m.Stale
	case processor.OutcomeUnrecorded:
		return &m.Unrecorded
	case processor.OutcomeWaived:
		return &m.Waived
	case processor.OutcomeRecordingFailed:
		return &m.RecordingFailed
	}
	return nil
}

// Count returns how many Record calls ended with outcome o.
func (m *Metrics) Count(o processor.Outcome) uint64 {
	if c := m.counter(o); c != nil {
		return c.Load()
	}
	return 0
}
