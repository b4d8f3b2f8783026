package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// Processor reports a service's processor: deliveries by disposition, of
// the function consumers (amends_processor_messages_total) and of the
// replay consumer (amends_processor_replay_messages_total, which reads
// every command of every record), replays, and executions per function
// (calls, successes, failures, immediate retries, replays, failures
// recorded without their retries because the consumer was near full, and
// calls not made again on a message that came back because the function
// was done on it), with the bounded context as a label.
func Processor(p *processor.Processor) prometheus.Collector {
	msgs, replayMsgs := processorMessageDescs()
	replays := desc("processor_replays_total", "Prepared compensations of this context, by what happened.", "context", "result")
	fn := desc("processor_function_executions_total", "Executions per function, by result.", "context", "processor", "function", "result")
	return &collector{descs: []*prometheus.Desc{msgs, replayMsgs, replays, fn}, read: func() []sample {
		m, c := p.Metrics(), p.Context()
		out := messageSamples(msgs, replayMsgs, m, c)
		out = append(out,
			counter(replays, m.Replays.Load(), c, "received"), counter(replays, m.ReplaysSkipped.Load(), c, "skipped"),
			counter(replays, m.ReplaysMissing.Load(), c, "missing"))
		for _, f := range p.Functions() {
			s := p.FunctionMetrics(f.ProcessorName, f.Name)
			if s == nil {
				continue
			}
			for result, v := range map[string]uint64{"call": s.Calls.Load(), "succeeded": s.Succeeded.Load(), "failed": s.Failed.Load(),
				"immediate_retry": s.Retries.Load(), "replayed": s.Replayed.Load(), "retries_shed": s.RetriesShed.Load(), "skipped_done": s.Skipped.Load()} {
				out = append(out, counter(fn, v, c, f.ProcessorName, f.Name, result))
			}
		}
		return out
	}}
}

func processorMessageDescs() (msgs, replayMsgs *prometheus.Desc) {
	return desc("processor_messages_total", "Messages the processor's function consumers handled, by disposition.", "context", "disposition"),
		desc("processor_replay_messages_total", "Messages of the compensation stream the processor's replay consumer handled, by disposition.", "context", "disposition")
}

// messageSamples reports the live and the replay consumers' counters, each
// under its own metric.
func messageSamples(msgs, replayMsgs *prometheus.Desc, m *processor.Metrics, c string) []sample {
	var out []sample
	for d, cm := range map[*prometheus.Desc]*processor.ConsumerMetrics{msgs: &m.ConsumerMetrics, replayMsgs: &m.Replay} {
		out = append(out,
			counter(d, cm.Delivered.Load(), c, "delivered"), counter(d, cm.Acked.Load(), c, "acked"),
			counter(d, cm.Naked.Load(), c, "naked"), counter(d, cm.Terminated.Load(), c, "terminated"),
			counter(d, cm.Undecodable.Load(), c, "undecodable"), counter(d, cm.AckErrors.Load(), c, "ack_error"))
	}
	return out
}

// Recorder reports a recorder's outcomes (amends_recorder_outcomes_total),
// send retries, the attempts it wrote by outcome (amends_attempts_total:
// first_failure, failed, succeeded, stale) and the final failures it wrote
// by function (amends_final_failures_total, at most MaxFunctions function
// labels plus recorder.OtherFunctions).
func Recorder(r *recorder.Recorder) prometheus.Collector {
	outcomes := desc("recorder_outcomes_total", "Failure recordings by outcome.", "outcome")
	retries := desc("recorder_send_retries_total", "Sends of compensation commands retried after a failed send.")
	attempts := desc("attempts_total", "Attempts (first failures and replays) written to records, by outcome.", "outcome")
	finals := desc("final_failures_total", "Failures that left their record with no automatic retry (retries exhausted or UNRECOVERABLE), by function.", "function")
	return &collector{descs: []*prometheus.Desc{outcomes, retries, attempts, finals}, read: func() []sample {
		m := r.Metrics()
		out := []sample{counter(retries, m.SendRetries.Load())}
		out = append(out, counter(attempts, m.Attempts.FirstFailure.Load(), "first_failure"), counter(attempts, m.Attempts.Failed.Load(), "failed"),
			counter(attempts, m.Attempts.Succeeded.Load(), "succeeded"), counter(attempts, m.Attempts.Stale.Load(), "stale"))
		for fn, n := range m.Final.Counts() {
			out = append(out, counter(finals, n, fn))
		}
		for _, o := range []processor.Outcome{processor.OutcomeRecorded, processor.OutcomeAlreadyRecorded, processor.OutcomeApplied,
			processor.OutcomeStale, processor.OutcomeUnrecorded, processor.OutcomeWaived, processor.OutcomeRecordingFailed} {
			out = append(out, counter(outcomes, m.Count(o), string(o)))
		}
		return out
	}}
}
