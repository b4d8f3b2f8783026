package circuit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/text"
	"github.com/amends-dev/amends/kvstore"
)

// Bounds of a stored circuit, checked by DecodeState.
const (
	// MaxValue bounds a stored circuit's JSON.
	MaxValue = 64 << 10
	// MaxMessageBytes bounds the last failure's message a circuit keeps;
	// a longer one is cut (on a rune boundary) before it is stored.
	MaxMessageBytes = 4096
	// MaxReasonBytes and MaxActorBytes bound an operator's reason and name.
	MaxReasonBytes = 1024
	MaxActorBytes  = 256
	maxCodeBytes   = 256
	maxIDBytes     = 128
	// skew is how far ahead of the reader's clock a stored time may be: the
	// clocks of the instances differ a little.
	skew = 5 * time.Minute
	// maxAhead bounds times meant to be in the future (an open circuit's
	// probe time, a probe's deadline).
	maxAhead = 24*time.Hour + skew
	maxCount = 1 << 53
)

// DecodeState reads the circuit stored under key, validating every field
// at now: the key is the circuit's function (CONTEXT.PROCESSOR.NAME, valid
// names); the phase is one of Phases and the fields that belong to it
// agree with it (Until and Forced only while OPEN, Until set unless
// forced, a probe only while HALF_OPEN); times are not negative and not
// ahead of now by more than a few minutes of clock skew (Until and the
// probe's deadline by at most a day more); counts are not negative and
// RefusedTotal is at least Refused; texts are valid UTF-8 within their
// bounds; a fingerprint has the shape of one; the incident ends after it
// begins; at most MaxTransitions transitions, numbered in increasing
// order, each of known phases and cause. The error matches ErrInvalid and
// names the field. A circuit that does not decode is never acted on: its
// function's calls go on as if it were closed (see Breaker).
func DecodeState(key string, value []byte, now time.Time) (State, error) {
	if len(value) > MaxValue {
		return State{}, bad("", "the value is %d bytes, over the limit of %d", len(value), MaxValue)
	}
	f, err := ParseFunction(key)
	if err != nil {
		return State{}, bad("key", "%v", err)
	}
	var s State
	if err := json.Unmarshal(value, &s); err != nil {
		return State{}, bad("", "not a circuit in JSON: %v", err)
	}
	if s.Function != f {
		return State{}, bad("function", "%s is not the key's function %s", s.Function, f)
	}
	if err := s.check(now); err != nil {
		return State{}, err
	}
	return s, nil
}

func (s *State) check(now time.Time) error {
	ms := now.UnixMilli()
	past := ms + skew.Milliseconds()
	ahead := ms + maxAhead.Milliseconds()
	if err := s.checkPhase(past, ahead); err != nil {
		return err
	}
	if err := checkProbe(s.Probe, past, ahead); err != nil {
		return err
	}
	switch {
	case !bounds.Within(s.Refused, 0, maxCount):
		return bad("refused", "must be from 0 to 2^53, got %d", s.Refused)
	case !bounds.Within(s.RefusedTotal, s.Refused, maxCount):
		return bad("refusedTotal", "must be from refused (%d) to 2^53, got %d", s.Refused, s.RefusedTotal)
	case s.Incident.To != 0 && s.Incident.To < s.Incident.From:
		return bad("incident.to", "%d is before the incident began at %d", s.Incident.To, s.Incident.From)
	case s.Incident.To != 0 && s.Incident.From == 0:
		return bad("incident.from", "an incident that ended must have begun")
	}
	if err := checkLast(s.Last, past); err != nil {
		return err
	}
	for _, c := range []struct {
		field string
		v     int64
	}{{"counts.opened", s.Counts.Opened}, {"counts.halfOpened", s.Counts.HalfOpened}, {"counts.closed", s.Counts.Closed},
		{"incident.opens", s.Incident.Opens}} {
		if !bounds.Within(c.v, 0, maxCount) {
			return bad(c.field, "must be from 0 to 2^53, got %d", c.v)
		}
	}
	return s.checkTransitions(past)
}

// checkPhase checks the phase, the times up to past (until up to ahead),
// the cool-down, and what only some phases have.
func (s *State) checkPhase(past, ahead int64) error {
	if !slices.Contains(Phases, s.Phase) {
		return bad("phase", "must be one of %v, got %.40q", Phases, s.Phase)
	}
	if err := s.checkTimes(past, ahead); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.checkHalfOpen()
}

// checkTimes checks the state's times: up to past, or ahead for the probe
// time, and a cool-down of at most a day.
func (s *State) checkTimes(past, ahead int64) error {
	for _, t := range []struct {
		field string
		v     int64
	}{{"since", s.Since}, {"updatedAt", s.UpdatedAt}, {"incident.from", s.Incident.From}, {"incident.to", s.Incident.To}} {
		if err := timeAt(t.field, t.v, past); err != nil {
			return err
		}
	}
	if err := timeAt("until", s.Until, ahead); err != nil {
		return err
	}
	if !bounds.Within(s.CoolDownMs, 0, (24 * time.Hour).Milliseconds()) {
		return bad("coolDownMs", "must be from 0 to a day, got %d", s.CoolDownMs)
	}
	return nil
}

// checkOpen checks what only an OPEN circuit has: a probe time, or an
// operator who opened it.
func (s *State) checkOpen() error {
	switch {
	case s.Phase != Open && (s.Until != 0 || s.Forced):
		return bad("until", "only an OPEN circuit has a probe time or is forced, this one is %s", s.Phase)
	case s.Phase == Open && !s.Forced && s.Until == 0:
		return bad("until", "an OPEN circuit that an operator did not open must have a probe time")
	case s.Phase == Open && s.Forced && s.Until != 0:
		return bad("until", "an OPEN circuit an operator opened has no probe time, got %d", s.Until)
	case s.Phase == Open && s.Forced && !s.openedByOperator():
		return unaudited("forced", "an OPEN circuit an operator opened keeps that operator's transition last, with the actor (amends circuits open writes it); this one does not, so no operator of amends opened it")
	}
	return nil
}

// checkHalfOpen checks what only a HALF_OPEN circuit has: a probe, its
// successes, the events probed and the probe failures.
func (s *State) checkHalfOpen() error {
	switch {
	case s.Phase != HalfOpen && (s.Probe != nil || s.Successes != 0 || len(s.Probed) != 0 || s.ProbeFailures != 0):
		return bad("probe", "only a HALF_OPEN circuit has a probe, successes or probe failures, this one is %s", s.Phase)
	case !bounds.Within(s.Successes, 0, 100):
		return bad("successes", "must be from 0 to 100, got %d", s.Successes)
	case len(s.Probed) > s.Successes:
		return bad("probed", "lists %d events, more than the %d successes", len(s.Probed), s.Successes)
	case !bounds.Within(s.ProbeFailures, 0, 100*101):
		return bad("probeFailures", "must be from 0 to %d, got %d", 100*101, s.ProbeFailures)
	}
	for i, e := range s.Probed {
		if err := plainText("probed["+strconv.Itoa(i)+"]", e, eventstore.MaxIDLength, true); err != nil {
			return err
		}
	}
	return nil
}

// checkProbe checks a HALF_OPEN circuit's probe, if any: times up to past
// (began) and ahead (ends), the end not before the beginning.
func checkProbe(p *Probe, past, ahead int64) error {
	if p == nil {
		return nil
	}
	if err := plainText("probe.instance", p.Instance, maxIDBytes, true); err != nil {
		return err
	}
	if err := plainText("probe.id", p.ID, maxIDBytes, true); err != nil {
		return err
	}
	if err := plainText("probe.event", p.Event, eventstore.MaxIDLength, false); err != nil {
		return err
	}
	if err := plainText("probe.record", p.Record, eventstore.MaxIDLength, false); err != nil {
		return err
	}
	if err := timeAt("probe.at", p.At, past); err != nil {
		return err
	}
	if err := timeAt("probe.until", p.Until, ahead); err != nil {
		return err
	}
	if p.Until < p.At {
		return bad("probe.until", "%d is before the probe began at %d", p.Until, p.At)
	}
	return nil
}

// checkLast checks the last real failure, if any.
func checkLast(l *Failure, past int64) error {
	if l == nil {
		return nil
	}
	if err := plainText("last.code", l.Code, maxCodeBytes, false); err != nil {
		return err
	}
	if err := plainText("last.message", l.Message, MaxMessageBytes, false); err != nil {
		return err
	}
	if l.Fingerprint != "" && !fingerprint.Valid(l.Fingerprint) {
		return bad("last.fingerprint", "%.40q is not a fingerprint (%s and 16 hexadecimal digits)", l.Fingerprint, fingerprint.Prefix)
	}
	if l.Recoverable != "" && !slices.Contains(aggregate.Recoverabilities, l.Recoverable) {
		return bad("last.recoverable", "must be one of %v, got %.40q", aggregate.Recoverabilities, l.Recoverable)
	}
	if err := timeAt("last.at", l.At, past); err != nil {
		return err
	}
	return nil
}

// checkTransitions checks the transitions kept: at most MaxTransitions, in
// sequence up to the counts' total, each with known phases and cause.
func (s *State) checkTransitions(past int64) error {
	if len(s.Transitions) > MaxTransitions {
		return bad("transitions", "has %d, over the limit of %d", len(s.Transitions), MaxTransitions)
	}
	var seq int64
	for i := range s.Transitions {
		t := &s.Transitions[i]
		if err := t.check("transitions["+strconv.Itoa(i)+"]", seq, s.Counts.Total(), past); err != nil {
			return err
		}
		seq = t.Seq
	}
	return nil
}

// check checks transition field of a circuit with total transitions,
// after the one numbered seq: its numbers, cause, time and words.
func (t *Transition) check(field string, seq, total, past int64) error {
	switch {
	case t.Seq <= seq || t.Seq > total:
		return bad(field+".seq", "must be above %d and at most the count of transitions %d, got %d", seq, total, t.Seq)
	case !slices.Contains(Phases, t.From) || !slices.Contains(Phases, t.To):
		return bad(field, "from and to must be among %v, got %.40q and %.40q", Phases, t.From, t.To)
	case !slices.Contains(Causes, t.Cause):
		return bad(field+".cause", "must be one of %v, got %.40q", Causes, t.Cause)
	case !bounds.Within(t.Failures, 0, 1<<30) || !bounds.Within(t.Calls, 0, 1<<30):
		return bad(field, "failures and calls must be from 0 to 2^30, got %d and %d", t.Failures, t.Calls)
	case !bounds.Within(t.CoolDownMs, 0, (24 * time.Hour).Milliseconds()):
		return bad(field+".coolDownMs", "must be from 0 to a day, got %d", t.CoolDownMs)
	case t.Cause == CauseOperator && strings.TrimSpace(t.Actor) == "":
		return unaudited(field+".actor", "an operator's transition names the operator, this one names none")
	}
	if err := timeAt(field+".at", t.At, past); err != nil {
		return err
	}
	return t.checkWords(field)
}

// checkWords checks the transition's instance, actor and reason; an
// operator's words by the one rule of operator text, as the API took them.
func (t *Transition) checkWords(field string) error {
	for _, x := range []struct {
		name, v string
		max     int
	}{{"instance", t.Instance, maxIDBytes}, {"actor", t.Actor, MaxActorBytes}, {"reason", t.Reason, MaxReasonBytes}} {
		if err := plainText(field+"."+x.name, x.v, x.max, false); err != nil {
			return err
		}
	}
	if t.Cause == CauseOperator {
		// An operator's words: the one rule of operator text, as the
		// API took them.
		for _, x := range []struct{ name, v string }{{"actor", t.Actor}, {"reason", t.Reason}} {
			if err := text.Line(x.v, MaxReasonBytes); err != nil {
				return bad(field+"."+x.name, "%s", err)
			}
		}
	}
	return nil
}

// openedByOperator reports whether s's last transition is an operator's
// open that names the operator: what a forced circuit keeps.
func (s *State) openedByOperator() bool {
	t, ok := s.LastTransition()
	return ok && t.Cause == CauseOperator && t.To == Open && strings.TrimSpace(t.Actor) != ""
}

func timeAt(field string, v, latest int64) error {
	if !bounds.Within(v, 0, latest) {
		return bad(field, "must be an epoch-ms time from 0 to %d (now and the allowed clock skew), got %d", latest, v)
	}
	return nil
}

func plainText(field, v string, limit int, required bool) error {
	switch {
	case required && v == "":
		return bad(field, "is empty")
	case len(v) > limit:
		return bad(field, "is %d bytes, over the limit of %d", len(v), limit)
	case !utf8.ValidString(v):
		return bad(field, "is not valid UTF-8")
	}
	for _, r := range v {
		if r < 0x20 && r != '\n' && r != '\t' {
			return bad(field, "has the control character %U", r)
		}
	}
	return nil
}

// bad returns an error matching ErrInvalid about field ("" for the value
// as a whole): a *kvstore.FieldError, so that the bucket's refusal names
// the field.
func bad(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", kvstore.Invalid(field, format, args...), ErrInvalid)
}

// unaudited is bad for a state that would change behaviour without the
// operator amends names with every such change (kvstore.Unaudited).
func unaudited(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", kvstore.Unaudited(field, format, args...), ErrInvalid)
}

// clip cuts s to at most n bytes on a rune boundary, dropping control
// characters other than newline and tab, so that it passes DecodeState.
func clip(s string, n int) string {
	out := make([]byte, 0, min(len(s), n))
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\t') {
			r = '?'
		}
		if len(out)+utf8.RuneLen(r) > n {
			break
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}
