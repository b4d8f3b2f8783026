package aggregate

import (
	"math"
	"math/bits"
)

// Messages of the retry math, as in Wow's NextRetryAtCalculator and Java's
// Math.*Exact.
const (
	msgMaxRetries       = "maxRetries must be greater than or equal to 0."
	msgMinBackoff       = "minBackoff must be greater than or equal to 0."
	msgExecutionTimeout = "executionTimeout must be greater than or equal to 0."
	msgRetries          = "retries must be greater than or equal to 0."
	msgBackoffRange     = "Retry backoff exceeds the supported millisecond range."
	msgLongOverflow     = "long overflow"
	msgMaxBackoff       = "maxBackoff must be greater than or equal to 0."
	msgJitter           = "jitter must be a fraction from 0 to 1"
)

// NextRetryAt returns when the retry after the given number of retries is
// due: currentRetryAt + minBackoff·2^retries seconds, in epoch ms. There is
// no cap and no jitter. minBackoff 0 means at once. It fails with
// ErrIllegalArgument for a negative argument and ErrArithmetic when the
// result does not fit in 64-bit milliseconds.
func NextRetryAt(minBackoff, retries int32, currentRetryAt int64) (int64, error) {
	if minBackoff < 0 {
		return 0, invalidField("minBackoff", msgMinBackoff)
	}
	if retries < 0 {
		return 0, illegalArgument(msgRetries)
	}
	if minBackoff == 0 {
		return currentRetryAt, nil
	}
	if retries >= 63 {
		return 0, arithmetic(msgBackoffRange)
	}
	seconds, err := multiplyExact(int64(minBackoff), int64(1)<<retries)
	if err != nil {
		return 0, err
	}
	millis, err := multiplyExact(seconds, 1000)
	if err != nil {
		return 0, err
	}
	return addExact(currentRetryAt, millis)
}

// NextRetryState is NextRetryStateOf with the record id "": the jitter of
// a spec that has one is then drawn from the attempt alone.
func NextRetryState(spec RetrySpec, retries int32, retryAt int64) (RetryState, error) {
	return NextRetryStateOf("", spec, retries, retryAt)
}

// NextRetryStateOf returns the retry state of attempt number retries of
// record id, prepared at retryAt (epoch ms): timeoutAt = retryAt +
// executionTimeout and nextRetryAt from NextRetryAtOf. Errors as
// NextRetryAtOf, plus ErrIllegalArgument for a negative executionTimeout.
func NextRetryStateOf(id string, spec RetrySpec, retries int32, retryAt int64) (RetryState, error) {
	if spec.ExecutionTimeout < 0 {
		return RetryState{}, invalidField("executionTimeout", msgExecutionTimeout)
	}
	next, err := NextRetryAtOf(id, spec, retries, retryAt)
	if err != nil {
		return RetryState{}, err
	}
	timeout, err := multiplyExact(int64(spec.ExecutionTimeout), 1000)
	if err != nil {
		return RetryState{}, err
	}
	timeoutAt, err := addExact(retryAt, timeout)
	if err != nil {
		return RetryState{}, err
	}
	return RetryState{Retries: retries, RetryAt: retryAt, TimeoutAt: timeoutAt, NextRetryAt: next}, nil
}

// ValidateRetrySpec is exactly Wow's NextRetryAtCalculator.validate: it
// checks maxRetries >= 0 and then computes the retry state of the last
// retry (retries = maxRetries, from time 0), so it refuses, in this order
// and with Wow's messages:
//
//   - maxRetries < 0: ErrIllegalArgument "maxRetries must be greater than
//     or equal to 0." (Field "maxRetries");
//   - executionTimeout < 0: ErrIllegalArgument "executionTimeout must be
//     greater than or equal to 0." (Field "executionTimeout");
//   - minBackoff < 0: ErrIllegalArgument "minBackoff must be greater than
//     or equal to 0." (Field "minBackoff");
//   - minBackoff > 0 and maxRetries >= 63: ErrArithmetic "Retry backoff
//     exceeds the supported millisecond range.";
//   - minBackoff·2^maxRetries seconds not fitting in 64-bit milliseconds:
//     ErrArithmetic "long overflow".
//
// Everything else is valid, zeros included: maxRetries 0 (only force
// prepares replay the record), minBackoff 0 (every retry is due at once),
// executionTimeout 0 (an attempt times out 1 ms after it is prepared).
// Stricter rules, such as the HTTP API refusing executionTimeout 0, belong
// to their callers, not here, so that every spec Wow accepts is accepted.
//
// Beyond Wow, the optional fields are checked after those: maxBackoff < 0
// ("maxBackoff must be greater than or equal to 0.") and a jitter outside
// [0, 1] fail with ErrIllegalArgument naming the field. With a maxBackoff
// no interval exceeds it, so a large maxRetries no longer overflows.
func ValidateRetrySpec(spec RetrySpec) error {
	if spec.MaxRetries < 0 {
		return invalidField("maxRetries", msgMaxRetries)
	}
	_, err := NextRetryState(spec, spec.MaxRetries, 0)
	return err
}

// multiplyExact multiplies two non-negative int64s, failing like Java's
// Math.multiplyExact on overflow.
func multiplyExact(a, b int64) (int64, error) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, arithmetic(msgLongOverflow)
	}
	return int64(lo), nil
}

// addExact adds two int64s, failing like Java's Math.addExact on overflow.
func addExact(a, b int64) (int64, error) {
	r := a + b
	if (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0) {
		return 0, arithmetic(msgLongOverflow)
	}
	return r, nil
}

// nextRetries returns retries+1. Kotlin's Int addition wraps at the top of
// the range, and the negative result then fails NextRetryAt's argument
// check; amends fails with the same error without wrapping.
func nextRetries(retries int32) (int32, error) {
	if retries == math.MaxInt32 {
		return 0, illegalArgument(msgRetries)
	}
	return retries + 1, nil
}
