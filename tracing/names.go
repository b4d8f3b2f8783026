package tracing

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of every amends tracer.
const ScopeName = "github.com/amends-dev/amends"

// Span names.
const (
	// SpanCall is a function's call on a delivered event.
	SpanCall = "amends.call"
	// SpanReplay is a function's call on a replayed event (a prepared
	// compensation, a held event released, or an operator's range replay).
	SpanReplay = "amends.replay"
	// SpanRecord is the recording of a call's result as ExecutionFailed
	// commands.
	SpanRecord = "amends.record"
	// SpanSchedulerPass is one pass of the scheduler over the due records.
	SpanSchedulerPass = "amends.scheduler.pass"
	// SpanSchedulerPrepare is the scheduler preparing one record.
	SpanSchedulerPrepare = "amends.scheduler.prepare"
	// SpanAppend is amends.Service.Append storing one command, started
	// when its caller's context has no span: the root of the trace that
	// the functions' calls on its events join.
	SpanAppend = "amends.append"
)

// Attribute keys.
const (
	AttrContext       = attribute.Key("amends.context")
	AttrProcessor     = attribute.Key("amends.processor")
	AttrFunction      = attribute.Key("amends.function")
	AttrFunctionKind  = attribute.Key("amends.function.kind")
	AttrAggregateType = attribute.Key("amends.aggregate.type")
	AttrAggregateID   = attribute.Key("amends.aggregate.id")
	AttrEventID       = attribute.Key("amends.event.id")
	AttrEventName     = attribute.Key("amends.event.name")
	AttrVersion       = attribute.Key("amends.version")
	AttrSeq           = attribute.Key("amends.seq")
	AttrRecordID      = attribute.Key("amends.record.id")
	AttrAttempt       = attribute.Key("amends.attempt")
	AttrRelease       = attribute.Key("amends.release")
	AttrReplayRequest = attribute.Key("amends.replay_request")
	AttrOutcome       = attribute.Key("amends.outcome")
	AttrDue           = attribute.Key("amends.due")
)

// MaxStatus bounds the error text a span's status carries.
const MaxStatus = 512

// Status returns msg cut to MaxStatus bytes at a character boundary, for a
// span's error status.
func Status(msg string) string {
	if len(msg) <= MaxStatus {
		return msg
	}
	cut := MaxStatus
	for cut > 0 && msg[cut]&0xC0 == 0x80 {
		cut--
	}
	return msg[:cut] + "…"
}
