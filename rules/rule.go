package rules

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/internal/text"
)

// Action is what a rule does to the failures it matches: one of Actions.
// It is a string, as api.Rule's Action is.
type Action = string

// The actions.
const (
	MarkUnrecoverable Action = "MARK_UNRECOVERABLE"
	MarkRecoverable   Action = "MARK_RECOVERABLE"
	ApplyRetrySpec    Action = "APPLY_RETRY_SPEC"
	ParkUntilDeploy   Action = "HOLD_UNTIL_DEPLOY" // park until deploy; the wire keeps its first name
	Waive             Action = "WAIVE"
)

// ParkUntilDeploySpelling is the other spelling of ParkUntilDeploy that
// ParseAction accepts, the action's name in words; it is never stored or
// shown: a rule given it is ParkUntilDeploy.
const ParkUntilDeploySpelling = "PARK_UNTIL_DEPLOY"

// HoldUntilDeploy is ParkUntilDeploy's old Go name.
//
// Deprecated: use ParkUntilDeploy (the wire value is unchanged).
const HoldUntilDeploy = ParkUntilDeploy

// Actions lists every action.
var Actions = []Action{MarkUnrecoverable, MarkRecoverable, ApplyRetrySpec, ParkUntilDeploy, Waive}

// Limits of a rule's fields, in bytes, and of the store.
const (
	MaxNameBytes   = 256
	MaxReasonBytes = 1024
	MaxAudit       = 20 // audit entries kept per rule, the newest
	MaxRules       = 10000
)

// Failure is what a rule is matched against.
type Failure struct {
	Function    aggregate.FunctionInfo
	ErrorCode   string
	Fingerprint string
}

// Matches reports whether m matches failure x (expiry aside).
func Matches(m api.RuleMatch, x Failure) bool {
	if m.Fingerprint != "" {
		return m.Fingerprint == x.Fingerprint
	}
	return m.FunctionContext == x.Function.ContextName && m.Processor == x.Function.ProcessorName &&
		m.Function == x.Function.Name && m.ErrorCode == x.ErrorCode
}

// Live reports whether r matches at now: not removed and not expired.
func Live(r *api.Rule, now time.Time) bool {
	return r.RemovedAt == 0 && (r.ExpiresAt == 0 || now.UnixMilli() < r.ExpiresAt)
}

// derive sets what a rule's stored fields imply: Touched, the sum of
// Recorded and Applied.
func derive(r *api.Rule) { r.Touched = r.Recorded + r.Applied }

func audit(r *api.Rule, a api.RuleAudit) {
	r.Audit = append(r.Audit, a)
	if n := len(r.Audit); n > MaxAudit {
		r.Audit = append(r.Audit[:0:0], r.Audit[n-MaxAudit:]...)
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalidRule)...)
}

// A field's text: a name (a match field), or an operator's words (a
// reason, an actor), checked by text.Line, the rule they are read back by
// too.
const (
	nameText     = false
	operatorText = true
)

func checkText(field, value string, max int, required, words bool) error {
	switch {
	case required && strings.TrimSpace(value) == "":
		return invalid("%s must not be blank", field)
	case len(value) > max:
		return invalid("%s must be at most %d bytes, got %d", field, max, len(value))
	case words:
		if err := text.Line(value, max); err != nil {
			return invalid("%s %s", field, err)
		}
	case !utf8.ValidString(value) || strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\t' }):
		return invalid("%s must be UTF-8 text without control characters", field)
	}
	return nil
}

// Validate checks a rule as an operator gives it (ID, CreatedAt, counts
// and audit are the store's), at now. Its errors wrap ErrInvalidRule and
// name the field: a match needs a valid fingerprint alone or all of
// functionContext, processor, function and errorCode; the action must be
// one of Actions; APPLY_RETRY_SPEC needs a retry spec that
// aggregate.ValidateRetrySpec accepts and no other action takes one; the
// reason must not be blank; expiresAt, if set, must be after now.
func Validate(r *api.Rule, now time.Time) error {
	m := r.Match
	for _, f := range []struct{ name, value string }{
		{"match.fingerprint", m.Fingerprint}, {"match.functionContext", m.FunctionContext},
		{"match.processor", m.Processor}, {"match.function", m.Function}, {"match.errorCode", m.ErrorCode},
	} {
		if err := checkText(f.name, f.value, MaxNameBytes, false, nameText); err != nil {
			return err
		}
	}
	if err := checkMatch(m); err != nil {
		return err
	}
	if err := checkAction(r); err != nil {
		return err
	}
	if err := checkText("reason", r.Reason, MaxReasonBytes, true, operatorText); err != nil {
		return err
	}
	if err := checkText("actor", r.Actor, MaxNameBytes, false, operatorText); err != nil {
		return err
	}
	if r.ExpiresAt != 0 && r.ExpiresAt <= now.UnixMilli() {
		return invalid("expiresAt must be after now (%d), got %d", now.UnixMilli(), r.ExpiresAt)
	}
	return nil
}

func validAction(a Action) bool {
	for _, v := range Actions {
		if a == v {
			return true
		}
	}
	return false
}

func actionList() string {
	names := make([]string, len(Actions))
	for i, a := range Actions {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// ParseAction reads an action case-insensitively, PARK_UNTIL_DEPLOY
// (ParkUntilDeploySpelling) as ParkUntilDeploy; the error wraps
// ErrInvalidRule and lists the actions.
func ParseAction(s string) (Action, error) {
	if strings.EqualFold(s, ParkUntilDeploySpelling) {
		return ParkUntilDeploy, nil
	}
	for _, a := range Actions {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	return "", invalid("action must be one of %s, got %q", actionList(), s)
}

// checkMatch checks that m takes a valid fingerprint, or a whole function
// and error code.
func checkMatch(m api.RuleMatch) error {
	byFunction := m.FunctionContext != "" || m.Processor != "" || m.Function != "" || m.ErrorCode != ""
	switch {
	case m.Fingerprint != "" && byFunction:
		return invalid("match takes a fingerprint or a function and error code, not both")
	case m.Fingerprint != "" && !fingerprint.Valid(m.Fingerprint):
		return invalid("match.fingerprint must be %s followed by 16 hexadecimal digits, got %q", fingerprint.Prefix, m.Fingerprint)
	case m.Fingerprint == "" && (m.FunctionContext == "" || m.Processor == "" || m.Function == "" || m.ErrorCode == ""):
		return invalid("match needs a fingerprint, or all of functionContext, processor, function and errorCode")
	}
	return nil
}

// checkAction checks r's action, and the retry spec it takes or not.
func checkAction(r *api.Rule) error {
	if !validAction(r.Action) {
		return invalid("action must be one of %s, got %q", actionList(), r.Action)
	}
	if r.Action == ApplyRetrySpec {
		if r.RetrySpec == nil {
			return invalid("retrySpec is required by the action %s", ApplyRetrySpec)
		}
		if err := aggregate.ValidateRetrySpec(*r.RetrySpec); err != nil {
			return invalid("retrySpec: %s", strings.TrimSuffix(err.Error(), "."))
		}
	} else if r.RetrySpec != nil {
		return invalid("retrySpec is only taken by the action %s, not %s", ApplyRetrySpec, r.Action)
	}
	return nil
}
