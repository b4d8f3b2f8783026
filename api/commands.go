package api

import "github.com/amends-dev/amends/aggregate"

// Command is an operator command, by its wire name: the last segment of
// POST /api/v1/records/{id}/{command} and of POST /api/v1/batch/{command}.
type Command string

// The operator commands. Create and the execution results come from
// services' recorders, not operators.
const (
	// CommandPrepare asks for a replay now (the CLI's prepare).
	CommandPrepare Command = aggregate.NamePrepareCompensation
	// CommandForcePrepare asks for a replay beyond the retry limit
	// (force-prepare); it needs a reason.
	CommandForcePrepare Command = aggregate.NameForcePrepareCompensation
	// CommandApplyRetrySpec replaces the retry spec (retry-spec).
	CommandApplyRetrySpec Command = aggregate.NameApplyRetrySpec
	// CommandMarkRecoverable reclassifies the failure (mark-recoverable).
	CommandMarkRecoverable Command = aggregate.NameMarkRecoverable
	// CommandChangeFunction retargets the record at another function
	// (change-function); it needs a reason.
	CommandChangeFunction Command = aggregate.NameChangeFunction
)

// OperatorCommands lists the commands POST /api/v1/records/{id}/{command}
// takes.
var OperatorCommands = []Command{CommandPrepare, CommandForcePrepare, CommandApplyRetrySpec, CommandMarkRecoverable, CommandChangeFunction}

// The bodies of the operator commands. Every body may carry Reason, the
// audit reason recorded in the record's history (required by
// force_prepare_compensation and change_function, at most 1024 bytes on
// one line); the server refuses any field it does not know.
type (
	// PrepareRequest is the body of prepare_compensation and
	// force_prepare_compensation. Probe makes the replay the probe of the
	// function's circuit when the circuit is not closed; without it the
	// server refuses to prepare such a record (409, code CircuitOpen),
	// since its replay would be refused and cost it a retry.
	PrepareRequest struct {
		Reason string `json:"reason,omitempty"`
		Probe  bool   `json:"probe,omitempty"`
	}
	// RetrySpecRequest is the body of apply_retry_spec: all three values
	// are required, the times in seconds.
	RetrySpecRequest struct {
		MaxRetries       int32 `json:"maxRetries"`
		MinBackoff       int32 `json:"minBackoff"`
		ExecutionTimeout int32 `json:"executionTimeout"`
		// MaxBackoff (seconds) and Jitter (0 to 1) are optional (beyond
		// Wow; see aggregate.RetrySpec).
		MaxBackoff int32   `json:"maxBackoff,omitempty"`
		Jitter     float64 `json:"jitter,omitempty"`
		Reason     string  `json:"reason,omitempty"`
	}
	// MarkRecoverableRequest is the body of mark_recoverable.
	MarkRecoverableRequest struct {
		Recoverable aggregate.Recoverability `json:"recoverable"`
		Reason      string                   `json:"reason,omitempty"`
	}
	// ChangeFunctionRequest is the body of change_function: the new
	// function, all four fields required.
	ChangeFunctionRequest struct {
		FunctionKind  aggregate.FunctionKind `json:"functionKind"`
		ContextName   string                 `json:"contextName"`
		ProcessorName string                 `json:"processorName"`
		Name          string                 `json:"name"`
		Reason        string                 `json:"reason,omitempty"`
	}
)

// CommandResponse is the body of a successful command: the record after
// it and the events it produced. Duplicate says the Idempotency-Key had
// run it already, and nothing changed.
type CommandResponse struct {
	ID        string          `json:"id"`
	State     aggregate.State `json:"state"`
	Version   uint64          `json:"version"`
	Events    []HistoryEvent  `json:"events"`
	Duplicate bool            `json:"duplicate"`
}
