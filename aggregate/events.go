package aggregate

// Event is one of the seven ExecutionFailed events. The set is sealed:
// only this package's types implement it.
type Event interface {
	// EventName is the event's snake_case wire name, e.g.
	// "compensation_prepared".
	EventName() string
	event()
}

// ExecutionFailedCreated: a failure was recorded (or a SUCCEEDED record
// re-opened).
type ExecutionFailedCreated struct {
	EventID     EventID        `json:"eventId"`
	Function    FunctionInfo   `json:"function"`
	Error       ErrorDetails   `json:"error"`
	ExecuteAt   int64          `json:"executeAt"`
	RetryState  RetryState     `json:"retryState"`
	RetrySpec   RetrySpec      `json:"retrySpec"`
	Recoverable Recoverability `json:"recoverable"`
	// Run (beyond Wow) is when and where the failed execution ran; nil
	// (absent) when unknown, as in every stream written before it.
	Run *Run `json:"run,omitempty"`
}

// CompensationPrepared: a replay was prepared. RetryState.Retries is the
// attempt number.
type CompensationPrepared struct {
	EventID    EventID      `json:"eventId"`
	Function   FunctionInfo `json:"function"`
	RetryState RetryState   `json:"retryState"`
}

// ExecutionFailedApplied: a replay failed again.
type ExecutionFailedApplied struct {
	Error       ErrorDetails   `json:"error"`
	ExecuteAt   int64          `json:"executeAt"`
	Recoverable Recoverability `json:"recoverable"`
	Attempt     int32          `json:"attempt,omitempty"`
	// Run (beyond Wow) is when and where the replay ran; nil when unknown.
	Run *Run `json:"run,omitempty"`
}

// ExecutionSuccessApplied: a replay succeeded.
type ExecutionSuccessApplied struct {
	ExecuteAt int64 `json:"executeAt"`
	Attempt   int32 `json:"attempt,omitempty"`
	// Run (beyond Wow) is when and where the replay ran; nil when unknown.
	Run *Run `json:"run,omitempty"`
}

// RetrySpecApplied: the retry spec was replaced.
type RetrySpecApplied struct {
	MaxRetries       int32 `json:"maxRetries"`
	MinBackoff       int32 `json:"minBackoff"`
	ExecutionTimeout int32 `json:"executionTimeout"`
	// MaxBackoff and Jitter as in RetrySpec (beyond Wow, omitted when 0).
	MaxBackoff int32   `json:"maxBackoff,omitempty"`
	Jitter     float64 `json:"jitter,omitempty"`
}

// FunctionChanged: the record now targets another function.
type FunctionChanged struct {
	Name          string       `json:"name"`
	ProcessorName string       `json:"processorName"`
	ContextName   string       `json:"contextName"`
	FunctionKind  FunctionKind `json:"functionKind"`
}

// RecoverableMarked: the failure was reclassified.
type RecoverableMarked struct {
	Recoverable Recoverability `json:"recoverable"`
}

// Event wire names.
const (
	NameExecutionFailedCreated  = "execution_failed_created"
	NameCompensationPrepared    = "compensation_prepared"
	NameExecutionFailedApplied  = "execution_failed_applied"
	NameExecutionSuccessApplied = "execution_success_applied"
	NameRetrySpecApplied        = "retry_spec_applied"
	NameFunctionChanged         = "function_changed"
	NameRecoverableMarked       = "recoverable_marked"
)

// EventNames lists the event names.
var EventNames = []string{
	NameExecutionFailedCreated, NameCompensationPrepared, NameExecutionFailedApplied,
	NameExecutionSuccessApplied, NameRetrySpecApplied, NameFunctionChanged, NameRecoverableMarked,
}

func (ExecutionFailedCreated) EventName() string  { return NameExecutionFailedCreated }
func (CompensationPrepared) EventName() string    { return NameCompensationPrepared }
func (ExecutionFailedApplied) EventName() string  { return NameExecutionFailedApplied }
func (ExecutionSuccessApplied) EventName() string { return NameExecutionSuccessApplied }
func (RetrySpecApplied) EventName() string        { return NameRetrySpecApplied }
func (FunctionChanged) EventName() string         { return NameFunctionChanged }
func (RecoverableMarked) EventName() string       { return NameRecoverableMarked }

func (ExecutionFailedCreated) event()  {}
func (CompensationPrepared) event()    {}
func (ExecutionFailedApplied) event()  {}
func (ExecutionSuccessApplied) event() {}
func (RetrySpecApplied) event()        {}
func (FunctionChanged) event()         {}
func (RecoverableMarked) event()       {}
