package aggregate

import (
	"fmt"
	"unicode/utf8"

	"github.com/amends-dev/amends/internal/bounds"
)

// Run (beyond Wow) says when and where one attempt ran: the first failure
// (CreateExecutionFailed) or a replay (ApplyExecutionSuccess or
// ApplyExecutionFailed). The attempt ended at the command's executeAt; its
// duration is executeAt minus StartedAt. Every field is optional: zero
// means unknown and is absent from the JSON, so a command or event without
// a Run (every Wow shape) means "not known".
type Run struct {
	// StartedAt is when the function was first called for the attempt
	// (immediate retries included), in epoch ms.
	StartedAt int64 `json:"startedAt,omitempty"`
	// Instance is the id of the processor instance that ran it.
	Instance string `json:"instance,omitempty"`
	// Build is the build that instance runs ("version@revision").
	Build string `json:"build,omitempty"`
	// TraceID is the W3C trace id (32 lowercase hex digits) of the
	// function call's span.
	TraceID string `json:"traceId,omitempty"`
}

// Limits of a Run's fields.
const (
	MaxRunInstanceLen = 128
	MaxRunBuildLen    = 256
)

// IsZero reports whether r says nothing.
func (r Run) IsZero() bool { return r == Run{} }

// RunOf returns r, or nil if r says nothing, so that an empty Run is
// absent from the JSON.
func RunOf(r Run) *Run {
	if r.IsZero() {
		return nil
	}
	return &r
}

// checkRun validates the run of a command that ended at executeAt: a start
// from 1 to executeAt, bounded printable names, a trace id of 32 lowercase
// hex digits that are not all zero.
func checkRun(r *Run, executeAt int64) error {
	if r == nil {
		return nil
	}
	if !bounds.Within(r.StartedAt, 0, executeAt) {
		return invalidField("run.startedAt", fmt.Sprintf("run.startedAt must be an epoch-millisecond time from 1 to executeAt (%d), got %d.", executeAt, r.StartedAt))
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"run.instance", r.Instance, MaxRunInstanceLen}, {"run.build", r.Build, MaxRunBuildLen}} {
		if len(f.v) > f.max {
			return invalidField(f.name, fmt.Sprintf("%s must be at most %d bytes, got %d.", f.name, f.max, len(f.v)))
		}
		if !printable(f.v) {
			return invalidField(f.name, f.name+" must be printable UTF-8 text.")
		}
	}
	if r.TraceID != "" && !validTraceID(r.TraceID) {
		return invalidField("run.traceId", fmt.Sprintf("run.traceId must be 32 lowercase hex digits, not all zero, got %d characters.", len(r.TraceID)))
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func validTraceID(s string) bool {
	if len(s) != 32 {
		return false
	}
	nonZero := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
		nonZero = nonZero || c != '0'
	}
	return nonZero
}

// Clean returns r without what Decide would refuse in a command that ended
// at executeAt: a start outside 1..executeAt is dropped, names are cut to
// their limits with control characters replaced by '?', and a malformed
// trace id is dropped. Recorders clean the runs they send, so that a clock
// step or an odd build name never makes a failure unrecordable.
func (r Run) Clean(executeAt int64) Run {
	if r.StartedAt <= 0 || r.StartedAt > executeAt {
		r.StartedAt = 0
	}
	r.Instance, r.Build = clip(r.Instance, MaxRunInstanceLen), clip(r.Build, MaxRunBuildLen)
	if r.TraceID != "" && !validTraceID(r.TraceID) {
		r.TraceID = ""
	}
	return r
}

// clip makes s printable UTF-8 of at most n bytes, cut at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n && printable(s) {
		return s
	}
	out := make([]rune, 0, min(len(s), n))
	size := 0
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			c = '?'
		}
		if size+utf8.RuneLen(c) > n {
			break
		}
		size += utf8.RuneLen(c)
		out = append(out, c)
	}
	return string(out)
}
