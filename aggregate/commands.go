package aggregate

// Command is one of the eight ExecutionFailed commands. The set is sealed:
// only this package's types implement it.
type Command interface {
	// CommandName is the command's snake_case wire name, e.g.
	// "prepare_compensation".
	CommandName() string
	command()
}

// CreateExecutionFailed records a failure. The record id comes from the
// caller (see RecordID). RetrySpec nil means the Decider's default.
type CreateExecutionFailed struct {
	EventID     EventID        `json:"eventId"`
	Function    FunctionInfo   `json:"function"`
	Error       ErrorDetails   `json:"error"`
	ExecuteAt   int64          `json:"executeAt"`
	RetrySpec   *RetrySpec     `json:"retrySpec"`
	Recoverable Recoverability `json:"recoverable,omitempty"`
	// Run (beyond Wow) is when and where the failed execution ran; nil
	// when unknown.
	Run *Run `json:"run,omitempty"`
}

// PrepareCompensation prepares a replay within the retry limit.
type PrepareCompensation struct{}

// ForcePrepareCompensation prepares a replay beyond the retry limit.
type ForcePrepareCompensation struct{}

// ApplyExecutionSuccess reports that a replay succeeded. Attempt (beyond
// Wow) is the attempt the replay ran as; 0 means unknown and is not fenced.
// PreparedVersion (beyond Wow) is the record's version after the
// CompensationPrepared the replay ran for; it tells apart the attempts of
// a record re-opened after it succeeded, whose attempt numbers start again
// at 1. 0 means unknown and is not fenced. Run (beyond Wow) is when and
// where the replay ran; nil when unknown.
type ApplyExecutionSuccess struct {
	ExecuteAt       int64  `json:"executeAt"`
	Attempt         int32  `json:"attempt,omitempty"`
	PreparedVersion uint64 `json:"preparedVersion,omitempty"`
	Run             *Run   `json:"run,omitempty"`
}

// ApplyExecutionFailed reports that a replay failed again. Attempt and
// PreparedVersion and Run as for ApplyExecutionSuccess.
type ApplyExecutionFailed struct {
	Error           ErrorDetails   `json:"error"`
	ExecuteAt       int64          `json:"executeAt"`
	Recoverable     Recoverability `json:"recoverable,omitempty"`
	Attempt         int32          `json:"attempt,omitempty"`
	PreparedVersion uint64         `json:"preparedVersion,omitempty"`
	Run             *Run           `json:"run,omitempty"`
}

// ApplyRetrySpec replaces the retry spec; it applies from the next prepare.
type ApplyRetrySpec struct {
	MaxRetries       int32 `json:"maxRetries"`
	MinBackoff       int32 `json:"minBackoff"`
	ExecutionTimeout int32 `json:"executionTimeout"`
	// MaxBackoff and Jitter as in RetrySpec (beyond Wow, omitted when 0).
	MaxBackoff int32   `json:"maxBackoff,omitempty"`
	Jitter     float64 `json:"jitter,omitempty"`
}

// ChangeFunction retargets the record after a function was renamed or moved.
type ChangeFunction struct {
	FunctionKind  FunctionKind `json:"functionKind"`
	ContextName   string       `json:"contextName"`
	ProcessorName string       `json:"processorName"`
	Name          string       `json:"name"`
}

// MarkRecoverable reclassifies the failure.
type MarkRecoverable struct {
	Recoverable Recoverability `json:"recoverable"`
}

// Command wire names.
const (
	NameCreateExecutionFailed    = "create_execution_failed"
	NamePrepareCompensation      = "prepare_compensation"
	NameForcePrepareCompensation = "force_prepare_compensation"
	NameApplyExecutionSuccess    = "apply_execution_success"
	NameApplyExecutionFailed     = "apply_execution_failed"
	NameApplyRetrySpec           = "apply_retry_spec"
	NameChangeFunction           = "change_function"
	NameMarkRecoverable          = "mark_recoverable"
)

// CommandNames lists the command names in Wow's registration order.
var CommandNames = []string{
	NameCreateExecutionFailed, NamePrepareCompensation, NameForcePrepareCompensation,
	NameApplyExecutionSuccess, NameApplyExecutionFailed, NameApplyRetrySpec,
	NameChangeFunction, NameMarkRecoverable,
}

func (CreateExecutionFailed) CommandName() string    { return NameCreateExecutionFailed }
func (PrepareCompensation) CommandName() string      { return NamePrepareCompensation }
func (ForcePrepareCompensation) CommandName() string { return NameForcePrepareCompensation }
func (ApplyExecutionSuccess) CommandName() string    { return NameApplyExecutionSuccess }
func (ApplyExecutionFailed) CommandName() string     { return NameApplyExecutionFailed }
func (ApplyRetrySpec) CommandName() string           { return NameApplyRetrySpec }
func (ChangeFunction) CommandName() string           { return NameChangeFunction }
func (MarkRecoverable) CommandName() string          { return NameMarkRecoverable }

func (CreateExecutionFailed) command()    {}
func (PrepareCompensation) command()      {}
func (ForcePrepareCompensation) command() {}
func (ApplyExecutionSuccess) command()    {}
func (ApplyExecutionFailed) command()     {}
func (ApplyRetrySpec) command()           {}
func (ChangeFunction) command()           {}
func (MarkRecoverable) command()          {}
