package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/text"
)

// MinExecutionTimeout is the API's least executionTimeout of
// apply_retry_spec, in seconds. Wow's validate allows 0, which makes every
// prepared replay time out at once, so it can be prepared again while it
// still runs; the API refuses it (stricter than the reference).
const MinExecutionTimeout = 1

// The bodies of the operator commands. Every body may carry "reason" (the
// audit reason, required by force_prepare_compensation and
// change_function); any other field is refused. Pointers mark the required
// fields, so that a missing one is told apart from a zero.
type (
	prepareRequest struct {
		Reason *string `json:"reason"`
		Probe  *bool   `json:"probe"`
	}
	applyRetrySpecRequest struct {
		MaxRetries       *int32   `json:"maxRetries"`
		MinBackoff       *int32   `json:"minBackoff"`
		ExecutionTimeout *int32   `json:"executionTimeout"`
		MaxBackoff       *int32   `json:"maxBackoff"`
		Jitter           *float64 `json:"jitter"`
		Reason           *string  `json:"reason"`
	}
	markRecoverableRequest struct {
		Recoverable *string `json:"recoverable"`
		Reason      *string `json:"reason"`
	}
	changeFunctionRequest struct {
		FunctionKind  *string `json:"functionKind"`
		ContextName   *string `json:"contextName"`
		ProcessorName *string `json:"processorName"`
		Name          *string `json:"name"`
		Reason        *string `json:"reason"`
	}
)

// decodeCommandRequest reads the body of operator command name strictly
// and returns the command, its audit reason and, for a prepare, whether
// its replay is to be the circuit's probe. Errors are 400s naming the
// field, or 422s (IllegalArgument) for values the command refuses; see
// checkRetrySpec for apply_retry_spec's rules.
func decodeCommandRequest(name string, body []byte) (aggregate.Command, string, bool, error) {
	what := "the body of " + name
	var (
		cmd    aggregate.Command
		reason *string
		probe  bool
	)
	switch name {
	case aggregate.NamePrepareCompensation, aggregate.NameForcePrepareCompensation:
		var req prepareRequest
		if err := decodeStrict(body, &req, what); err != nil {
			return nil, "", false, err
		}
		reason, probe = req.Reason, req.Probe != nil && *req.Probe
		cmd = aggregate.PrepareCompensation{}
		if name == aggregate.NameForcePrepareCompensation {
			cmd = aggregate.ForcePrepareCompensation{}
		}
	case aggregate.NameApplyRetrySpec:
		c, r, err := decodeRetrySpec(name, body, what)
		if err != nil {
			return nil, "", false, err
		}
		reason, cmd = r, c
	case aggregate.NameMarkRecoverable:
		c, r, err := decodeMarkRecoverable(name, body, what)
		if err != nil {
			return nil, "", false, err
		}
		reason, cmd = r, c
	case aggregate.NameChangeFunction:
		c, r, err := decodeChangeFunction(name, body, what)
		if err != nil {
			return nil, "", false, err
		}
		reason, cmd = r, c
	default:
		return nil, "", false, &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
			Message: "unknown command " + quote(name) + "; the commands are " + strings.Join(OperatorCommands, ", "), Details: map[string]any{"field": "command"}}}
	}
	r, err := checkCommandReason(name, reason)
	if err != nil {
		return nil, "", false, err
	}
	return cmd, r, probe, nil
}

// given says whether a required field is in the body (and not null).
type given struct {
	field string
	ok    bool
}

// required refuses the first field that is not given, with the
// aggregate's message.
func required(command string, fields ...given) error {
	for _, f := range fields {
		if !f.ok {
			return badRequest(f.field, "%s requires the field %s.", command, f.field)
		}
	}
	return nil
}

// checkRetrySpec applies Wow's validate (aggregate.ValidateRetrySpec:
// maxRetries, executionTimeout and minBackoff >= 0, the last backoff
// fitting in 64-bit milliseconds), then the API's rule executionTimeout >=
// MinExecutionTimeout. A refusal is a 422 IllegalArgument naming the
// field, with Wow's message where Wow refuses.
func checkRetrySpec(c aggregate.ApplyRetrySpec) error {
	unprocessable := func(field, msg string) error {
		return &apiError{status: http.StatusUnprocessableEntity, body: api.Error{Code: aggregate.ErrIllegalArgument.Error(), Message: msg, Details: map[string]any{"field": field}}}
	}
	if err := aggregate.ValidateRetrySpec(aggregate.RetrySpec(c)); err != nil {
		if field := aggregate.ErrorField(err); field != "" {
			return unprocessable(field, errMessage(err))
		}
		// The retry math overflowed: the backoff, or else the timeout.
		field := "executionTimeout"
		if aggregate.ValidateRetrySpec(aggregate.RetrySpec{MaxRetries: c.MaxRetries, MinBackoff: c.MinBackoff}) != nil {
			field = "minBackoff"
		}
		return unprocessable(field, fmt.Sprintf("%s %s is too large for maxRetries %d: the last backoff (minBackoff·2^maxRetries seconds) and executionTimeout must fit in 64-bit milliseconds.", errMessage(err), field, c.MaxRetries))
	}
	if c.ExecutionTimeout < MinExecutionTimeout {
		return unprocessable("executionTimeout", fmt.Sprintf("executionTimeout must be at least %d second (the API's rule: 0 would let a running replay be prepared again at once), got %d.", MinExecutionTimeout, c.ExecutionTimeout))
	}
	return nil
}

// errMessage is the message of an aggregate error, or the error's text.
func errMessage(err error) string {
	if ae, ok := err.(*aggregate.Error); ok {
		return ae.Message
	}
	return err.Error()
}

// reasonRequired lists the commands that need a reason in the audit trail.
var reasonRequired = []string{aggregate.NameForcePrepareCompensation, aggregate.NameChangeFunction}

// MaxReasonLength bounds an audit reason.
const MaxReasonLength = text.MaxReasonBytes

// checkCommandReason checks the audit reason of command name, required for
// the commands of reasonRequired.
func checkCommandReason(name string, p *string) (string, error) {
	return checkReason(name, slices.Contains(reasonRequired, name), p)
}

// checkReason trims and checks an audit reason of what (a command name, "a
// range replay"): required if required, and operator text of at most
// MaxReasonLength bytes (checkOperatorText).
func checkReason(what string, required bool, p *string) (string, error) {
	reason := ""
	if p != nil {
		reason = strings.TrimSpace(*p)
	}
	if reason == "" && required {
		return "", badRequest("reason", "%s needs a reason for the audit trail: add \"reason\": \"...\" to the body (amends --reason)", what)
	}
	if ae := checkOperatorText("reason", reason, MaxReasonLength); ae != nil {
		return "", ae
	}
	return reason, nil
}

// decodeRetrySpec decodes the body of an ApplyRetrySpec command: its retry spec, required fields first.
func decodeRetrySpec(name string, body []byte, what string) (aggregate.Command, *string, error) {
	var req applyRetrySpecRequest
	if err := decodeStrict(body, &req, what); err != nil {
		return nil, nil, err
	}
	if err := required(name, given{"maxRetries", req.MaxRetries != nil}, given{"minBackoff", req.MinBackoff != nil}, given{"executionTimeout", req.ExecutionTimeout != nil}); err != nil {
		return nil, nil, err
	}
	c := aggregate.ApplyRetrySpec{MaxRetries: *req.MaxRetries, MinBackoff: *req.MinBackoff, ExecutionTimeout: *req.ExecutionTimeout}
	if req.MaxBackoff != nil {
		c.MaxBackoff = *req.MaxBackoff
	}
	if req.Jitter != nil {
		c.Jitter = *req.Jitter
	}
	if err := checkRetrySpec(c); err != nil {
		return nil, nil, err
	}
	return c, req.Reason, nil
}

// decodeMarkRecoverable decodes the body of a MarkRecoverable command.
func decodeMarkRecoverable(name string, body []byte, what string) (aggregate.Command, *string, error) {
	var req markRecoverableRequest
	if err := decodeStrict(body, &req, what); err != nil {
		return nil, nil, err
	}
	if err := required(name, given{"recoverable", req.Recoverable != nil}); err != nil {
		return nil, nil, err
	}
	rec, err := aggregate.ParseRecoverability(*req.Recoverable)
	if err != nil {
		return nil, nil, badRequest("recoverable", "%v", err)
	}
	return aggregate.MarkRecoverable{Recoverable: rec}, req.Reason, nil
}

// decodeChangeFunction decodes the body of a ChangeFunction command: the whole function, as text.
func decodeChangeFunction(name string, body []byte, what string) (aggregate.Command, *string, error) {
	var req changeFunctionRequest
	if err := decodeStrict(body, &req, what); err != nil {
		return nil, nil, err
	}
	if err := required(name, given{"functionKind", req.FunctionKind != nil}, given{"contextName", req.ContextName != nil},
		given{"processorName", req.ProcessorName != nil}, given{"name", req.Name != nil}); err != nil {
		return nil, nil, err
	}
	kind, err := aggregate.ParseFunctionKind(*req.FunctionKind)
	if err != nil {
		return nil, nil, badRequest("functionKind", "%v", err)
	}
	c := aggregate.ChangeFunction{FunctionKind: kind, ContextName: *req.ContextName, ProcessorName: *req.ProcessorName, Name: *req.Name}
	for _, f := range []struct{ name, value string }{{"contextName", c.ContextName}, {"processorName", c.ProcessorName}, {"name", c.Name}} {
		if ae := checkText(f.name, f.value, MaxParamBytes); ae != nil {
			return nil, nil, ae
		}
	}
	return c, req.Reason, nil
}
