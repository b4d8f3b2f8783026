package aggregate

// Evolve returns the state after event e. It never fails: events are facts.
// It follows Wow's sourcing handlers; note what each keeps:
// CompensationPrepared replaces only the retry state, ExecutionFailedApplied
// keeps the retry state, ExecutionSuccessApplied keeps the last error and
// classification, RetrySpecApplied does not recompute the retry state.
func Evolve(s State, e Event) State {
	switch e := e.(type) {
	case ExecutionFailedCreated:
		s.EventID, s.Function, s.Error, s.ExecuteAt = e.EventID, e.Function, e.Error, e.ExecuteAt
		s.RetryState, s.RetrySpec, s.Recoverable = e.RetryState, e.RetrySpec, orUnknown(e.Recoverable)
		s.Status = StatusFailed
	case CompensationPrepared:
		s.RetryState = e.RetryState
		s.Status = StatusPrepared
		s.PreparedVersion = 0 // unknown here; EvolveAt knows it
	case ExecutionFailedApplied:
		s.ExecuteAt, s.Error, s.Recoverable = e.ExecuteAt, e.Error, orUnknown(e.Recoverable)
		s.Status = StatusFailed
	case ExecutionSuccessApplied:
		s.ExecuteAt = e.ExecuteAt
		s.Status = StatusSucceeded
	case RetrySpecApplied:
		s.RetrySpec = RetrySpec(e)
	case FunctionChanged:
		s.Function = FunctionInfo{FunctionKind: e.FunctionKind, ContextName: e.ContextName, ProcessorName: e.ProcessorName, Name: e.Name}
	case RecoverableMarked:
		s.Recoverable = orUnknown(e.Recoverable)
	}
	return s
}

// EvolveAll applies events in order.
func EvolveAll(s State, events ...Event) State {
	for _, e := range events {
		s = Evolve(s, e)
	}
	return s
}

// EvolveAt applies the events of the stream at version version, in order,
// and records that version as PreparedVersion if they prepared an attempt.
// The Service evolves its records with it.
func EvolveAt(s State, version uint64, events ...Event) State {
	for _, e := range events {
		s = Evolve(s, e)
		if _, ok := e.(CompensationPrepared); ok {
			s.PreparedVersion = version
		}
	}
	return s
}
