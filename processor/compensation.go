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
	// Release is true when the delivery is a held event given to an
	// Ordered function after its hold's head was resolved; ID is then the
	// head record's id and Attempt and Prepared are 0.
	Release bool
	// Request is the id of the operator's range replay the delivery runs
	// for (see ReplayRequest); empty otherwise.
	Request string
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
