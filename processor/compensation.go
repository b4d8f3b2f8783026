package processor

import "context"

// Compensation identifies a replay: the ExecutionFailed record it runs for
// and the attempt (the record's retries when it was prepared), which the
// result reports so that a stale attempt cannot overwrite a newer one.
type Compensation struct {
	// ID is the ExecutionFailed record id (Wow's compensate.id).
	ID string
	// Attempt is the prepared attempt, 1 for the first replay.
	Attempt int32
	// Prepared is the record's version after the CompensationPrepared this
	// replay runs for. Unlike Attempt, which starts again at 1 when a
	// SUCCEEDED record is re-opened, it is never reused; 0 if unknown.
	Prepared uint64
}

type compensationKey struct{}

// CompensationFrom returns the compensation a handler runs for, and false
// on a normal delivery.
func CompensationFrom(ctx context.Context) (Compensation, bool) {
	c, ok := ctx.Value(compensationKey{}).(Compensation)
	return c, ok
}

// WithCompensation returns ctx carrying c, as the processor passes it to a
// replayed handler. Useful in tests of handlers.
func WithCompensation(ctx context.Context, c Compensation) context.Context {
	return context.WithValue(ctx, compensationKey{}, c)
}
