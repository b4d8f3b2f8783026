package aggregate_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
)

func TestNextRetryAt(t *testing.T) {
	cases := []struct {
		name                string
		minBackoff, retries int32
		from                int64
		want                int64
		err                 error
		msg                 string
	}{
		{name: "first retry", minBackoff: 180, retries: 0, from: t0, want: t0 + 180_000},
		{name: "doubles per retry", minBackoff: 180, retries: 1, from: t0, want: t0 + 360_000},
		{name: "tenth retry is 51.2 hours", minBackoff: 180, retries: 10, from: t0, want: t0 + 184_320_000},
		{name: "zero backoff is immediate, even at huge retries", minBackoff: 0, retries: 1000, from: t0, want: t0},
		{name: "2^53 seconds still fit in milliseconds", minBackoff: 1, retries: 53, from: 0, want: 1000 << 53},
		{name: "63 retries exceed the range", minBackoff: 1, retries: 63, err: ErrArithmetic, msg: "Retry backoff exceeds the supported millisecond range."},
		{name: "seconds overflow", minBackoff: math.MaxInt32, retries: 62, err: ErrArithmetic, msg: "long overflow"},
		{name: "milliseconds overflow", minBackoff: 1, retries: 62, err: ErrArithmetic, msg: "long overflow"},
		{name: "addition overflows", minBackoff: 1, retries: 0, from: math.MaxInt64 - 999, err: ErrArithmetic, msg: "long overflow"},
		{name: "addition just fits", minBackoff: 1, retries: 0, from: math.MaxInt64 - 1000, want: math.MaxInt64},
		{name: "negative backoff", minBackoff: -1, err: ErrIllegalArgument, msg: "minBackoff must be greater than or equal to 0."},
		{name: "negative retries", minBackoff: 1, retries: -1, err: ErrIllegalArgument, msg: "retries must be greater than or equal to 0."},
		{name: "negative retries with zero backoff", minBackoff: 0, retries: -1, err: ErrIllegalArgument, msg: "retries must be greater than or equal to 0."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NextRetryAt(c.minBackoff, c.retries, c.from)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				assert.EqualError(t, err, c.msg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestNextRetryStateAndValidate(t *testing.T) {
	rs, err := NextRetryState(RetrySpec{MaxRetries: 10, MinBackoff: 180, ExecutionTimeout: 120}, 3, t0)
	require.NoError(t, err)
	assert.Equal(t, RetryState{Retries: 3, RetryAt: t0, TimeoutAt: t0 + 120_000, NextRetryAt: t0 + 1_440_000}, rs)

	_, err = NextRetryState(RetrySpec{ExecutionTimeout: 1}, 0, math.MaxInt64)
	assert.EqualError(t, err, "long overflow", "timeoutAt overflow")

	for _, c := range []struct {
		spec RetrySpec
		msg  string
	}{
		{RetrySpec{MaxRetries: -1}, "maxRetries must be greater than or equal to 0."},
		{RetrySpec{MaxRetries: 1, MinBackoff: -1}, "minBackoff must be greater than or equal to 0."},
		{RetrySpec{MaxRetries: 1, ExecutionTimeout: -5}, "executionTimeout must be greater than or equal to 0."},
		{RetrySpec{MaxRetries: 54, MinBackoff: 1}, "long overflow"},
		{RetrySpec{MaxRetries: 63, MinBackoff: 1}, "Retry backoff exceeds the supported millisecond range."},
		{RetrySpec{MaxRetries: 2147483647, MinBackoff: 1}, "Retry backoff exceeds the supported millisecond range."},
		// Wow's order: maxRetries, then executionTimeout, then minBackoff.
		{RetrySpec{MaxRetries: -1, MinBackoff: -1, ExecutionTimeout: -1}, "maxRetries must be greater than or equal to 0."},
		{RetrySpec{MaxRetries: 1, MinBackoff: -1, ExecutionTimeout: -1}, "executionTimeout must be greater than or equal to 0."},
		{RetrySpec{MaxRetries: 63, MinBackoff: -1}, "minBackoff must be greater than or equal to 0."},
	} {
		assert.EqualError(t, ValidateRetrySpec(c.spec), c.msg, "%+v", c.spec)
	}
	for _, ok := range []RetrySpec{
		DefaultRetrySpec, {}, {MaxRetries: 53, MinBackoff: 1}, {MaxRetries: 2147483647},
		{MaxRetries: 1, MinBackoff: 2147483647, ExecutionTimeout: 2147483647},
		// Wow accepts an execution timeout of 0; stricter rules are the API's.
		{MaxRetries: 10, MinBackoff: 180, ExecutionTimeout: 0}, {MaxRetries: 0, MinBackoff: 0, ExecutionTimeout: 0},
	} {
		assert.NoError(t, ValidateRetrySpec(ok), "%+v is valid", ok)
	}
}
