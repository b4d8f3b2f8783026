package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// Processor reports a service's processor: deliveries by disposition,
// replays, and executions per function (calls, successes, failures,
// immediate retries, replays), with the bounded context as a label.
func Processor(p *processor.Processor) prometheus.Collector {
	msgs := desc("processor_messages_total", "Messages the processor's consumers handled, by disposition.", "context", "disposition")
	replays := desc("processor_replays_total", "Prepared compensations of this context, by what happened.", "context", "result")
	fn := desc("processor_function_executions_total", "Executions per function, by result.", "context", "processor", "function", "result")
	return &collector{descs: []*prometheus.Desc{msgs, replays, fn}, read: func() []sample {
		m, c := p.Metrics(), p.Context()
		out := []sample{
			counter(msgs, m.Delivered.Load(), c, "delivered"), counter(msgs, m.Acked.Load(), c, "acked"),
			counter(msgs, m.Naked.Load(), c, "naked"), counter(msgs, m.Terminated.Load(), c, "terminated"),
			counter(msgs, m.Undecodable.Load(), c, "undecodable"), counter(msgs, m.AckErrors.Load(), c, "ack_error"),
			counter(replays, m.Replays.Load(), c, "received"), counter(replays, m.ReplaysSkipped.Load(), c, "skipped"),
			counter(replays, m.ReplaysMissing.Load(), c, "missing"),
		}
		for _, f := range p.Functions() {
			s := p.FunctionMetrics(f.ProcessorName, f.Name)
			if s == nil {
				continue
			}
			for result, v := range map[string]uint64{"call": s.Calls.Load(), "succeeded": s.Succeeded.Load(), "failed": s.Failed.Load(),
				"immediate_retry": s.Retries.Load(), "replayed": s.Replayed.Load()} {
				out = append(out, counter(fn, v, c, f.ProcessorName, f.Name, result))
			}
		}
		return out
	}}
}

// Recorder reports a recorder's outcomes (amends_recorder_outcomes_total)
// and send retries.
func Recorder(r *recorder.Recorder) prometheus.Collector {
	outcomes := desc("recorder_outcomes_total", "Failure recordings by outcome.", "outcome")
	retries := desc("recorder_send_retries_total", "Sends of compensation commands retried after a failed send.")
	return &collector{descs: []*prometheus.Desc{outcomes, retries}, read: func() []sample {
		m := r.Metrics()
		out := []sample{counter(retries, m.SendRetries.Load())}
		for _, o := range []processor.Outcome{processor.OutcomeRecorded, processor.OutcomeAlreadyRecorded, processor.OutcomeApplied,
			processor.OutcomeStale, processor.OutcomeUnrecorded, processor.OutcomeWaived, processor.OutcomeRecordingFailed} {
			out = append(out, counter(outcomes, m.Count(o), string(o)))
		}
		return out
	}}
}
