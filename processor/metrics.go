package processor

import (
	"sync/atomic"

	"github.com/amends-dev/amends/aggregate"
)

// Metrics are a Processor's counters, updated atomically while it runs.
// Read them with Load; they only grow.
//
// The embedded ConsumerMetrics count the messages of the function
// consumers, on the context's own stream. Replay counts those of the
// replay consumer, which reads every command of every record on the
// compensation stream (the record's creation included), so its numbers
// mean something else and are kept apart.
type Metrics struct {
	ConsumerMetrics
	// Replay counts the replay consumer's messages.
	Replay ConsumerMetrics
	// Replays counts CompensationPrepared events of this context received.
	Replays atomic.Uint64
	// ReplaysSkipped counts replays not run because the record had moved on
	// (needs WithRecords).
	ReplaysSkipped atomic.Uint64
	// ReplaysMissing counts replays whose function or event is gone.
	ReplaysMissing atomic.Uint64
	// Outcomes counts recorder outcomes as the processor saw them.
	Outcomes [8]atomic.Uint64
}

// ConsumerMetrics count one kind of consumer's messages by what became of
// them.
type ConsumerMetrics struct {
	// Delivered counts messages received.
	Delivered atomic.Uint64
	// Acked counts messages acked: handled, or failures recorded, waived or
	// unrecordable, or nothing to do.
	Acked atomic.Uint64
	// Naked counts messages left for redelivery because recording failed or
	// the processor stopped before finishing them.
	Naked atomic.Uint64
	// Undecodable counts messages that could not be decoded; each is
	// logged with its stream sequence and terminated.
	Undecodable atomic.Uint64
	// Terminated counts messages terminated (Term).
	Terminated atomic.Uint64
	// AckErrors counts acks, naks and terms the client could not send; the
	// server then redelivers after AckWait.
	AckErrors atomic.Uint64
}

var outcomeIndex = map[Outcome]int{
	OutcomeNone: 0, OutcomeRecorded: 1, OutcomeAlreadyRecorded: 2, OutcomeApplied: 3,
	OutcomeStale: 4, OutcomeUnrecorded: 5, OutcomeWaived: 6, OutcomeRecordingFailed: 7,
}

// Outcome returns how many executions ended with outcome o.
func (m *Metrics) Outcome(o Outcome) uint64 {
	i, ok := outcomeIndex[o]
	if !ok {
		return 0
	}
	return m.Outcomes[i].Load()
}

func (m *Metrics) countOutcome(o Outcome) {
	if i, ok := outcomeIndex[o]; ok {
		m.Outcomes[i].Add(1)
	}
}

// FunctionMetrics are one function's counters.
type FunctionMetrics struct {
	// Calls counts handler calls, immediate retries and replays included.
	Calls atomic.Uint64
	// Succeeded counts executions that ended without error.
	Succeeded atomic.Uint64
	// Failed counts executions that still failed after immediate retries.
	Failed atomic.Uint64
	// Retries counts immediate retries.
	Retries atomic.Uint64
	// RetriesShed counts failures recorded without their immediate retries
	// because the consumer held three quarters of its MaxAckPending.
	RetriesShed atomic.Uint64
	// Skipped counts the times the function was not run again on a message
	// that came back
	// (nak'ed, or redelivered after a lost ack) because it was done on it.
	Skipped atomic.Uint64
	// Replayed counts replays run.
	Replayed atomic.Uint64
	// Refused counts the calls the function's circuit refused (package
	// circuit): live events and replays recorded at once with errorCode
	// CircuitOpen, without a call. Probes counts the calls made as the
	// circuit's probe (included in Calls).
	Refused atomic.Uint64
	Probes  atomic.Uint64
	// Held counts events held behind a failure (Ordered functions).
	Held atomic.Uint64
	// Released counts held events given to the function by a release.
	Released atomic.Uint64
}

// FunctionMetrics returns the counters of function (processor, name), or
// nil if no such function is registered.
func (p *Processor) FunctionMetrics(processor, name string) *FunctionMetrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.functions[key{processor, name}]; ok {
		return f.stats
	}
	return nil
}

// Metrics returns the processor's counters.
func (p *Processor) Metrics() *Metrics { return &p.metrics }

// Functions lists the registered functions' identities in registration
// order.
func (p *Processor) Functions() []aggregate.FunctionInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []aggregate.FunctionInfo
	for _, g := range p.groups {
		for _, f := range g.functions {
			out = append(out, f.info)
		}
	}
	return out
}
