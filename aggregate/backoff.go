package aggregate

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
)

// NextRetryAtOf returns when the retry after the given number of retries
// of record id is due, in epoch ms, under spec.
//
// Without maxBackoff and jitter (both 0, as in every Wow spec) it is
// exactly NextRetryAt(spec.MinBackoff, retries, currentRetryAt), errors
// included. Beyond Wow:
//
//   - maxBackoff > 0 caps one interval: min(minBackoff·2^retries,
//     maxBackoff) seconds; an interval past the 64-bit range is the cap, so
//     a capped spec never overflows in the interval.
//   - jitter j in (0, 1] shortens the interval by a fraction drawn from
//     [0, j): the result lies in [(1-j)·interval, interval], so the cap
//     stays a hard bound. The fraction is a hash of (id, retries), not a
//     random draw, so Decide stays pure and a replay of the same events
//     computes the same times.
//
// It fails with ErrIllegalArgument for a negative minBackoff, retries or
// maxBackoff and for a jitter that is not a number from 0 to 1 (each
// naming its field), and with ErrArithmetic when the result does not fit
// in 64-bit milliseconds.
func NextRetryAtOf(id string, spec RetrySpec, retries int32, currentRetryAt int64) (int64, error) {
	if spec.MaxBackoff == 0 && spec.Jitter == 0 {
		return NextRetryAt(spec.MinBackoff, retries, currentRetryAt)
	}
	interval, err := intervalMillis(spec, retries)
	if err != nil {
		return 0, err
	}
	if spec.Jitter > 0 && interval > 0 {
		interval -= jitterMillis(interval, spec.Jitter, jitterUnit(id, retries))
	}
	return addExact(currentRetryAt, interval)
}

// intervalMillis is the capped interval before jitter, after checking the
// arguments in NextRetryAt's order and then the fields beyond Wow.
func intervalMillis(spec RetrySpec, retries int32) (int64, error) {
	switch {
	case spec.MinBackoff < 0:
		return 0, invalidField("minBackoff", msgMinBackoff)
	case retries < 0:
		return 0, illegalArgument(msgRetries)
	case spec.MaxBackoff < 0:
		return 0, invalidField("maxBackoff", msgMaxBackoff)
	case !(spec.Jitter >= 0 && spec.Jitter <= 1): // NaN too
		return 0, invalidField("jitter", fmt.Sprintf("%s, got %v.", msgJitter, spec.Jitter))
	case spec.MinBackoff == 0:
		return 0, nil
	}
	if spec.MaxBackoff == 0 {
		if retries >= 63 {
			return 0, arithmetic(msgBackoffRange)
		}
		seconds, err := multiplyExact(int64(spec.MinBackoff), int64(1)<<retries)
		if err != nil {
			return 0, err
		}
		return multiplyExact(seconds, 1000)
	}
	capMillis := int64(spec.MaxBackoff) * 1000
	if retries >= 63 {
		return capMillis, nil
	}
	seconds, err := multiplyExact(int64(spec.MinBackoff), int64(1)<<retries)
	if err != nil || seconds >= int64(spec.MaxBackoff) {
		return capMillis, nil
	}
	return seconds * 1000, nil // seconds < maxBackoff, an int32: no overflow
}

// jitterMillis is the part of interval the jitter takes off:
// floor(interval·jitter·unit), at most interval.
func jitterMillis(interval int64, jitter, unit float64) int64 {
	f := jitter * unit // in [0, 1)
	if f <= 0 {
		return 0
	}
	q := uint64(f * 0x1p64)
	if f >= 1 { // unit is below 1, so only rounding gets here
		q = math.MaxUint64
	}
	hi, _ := bits.Mul64(uint64(interval), q)
	return int64(hi)
}

// jitterUnit maps (id, retries) to a fraction in [0, 1): FNV-1a over the
// id and the attempt, finished with the SplitMix64 mix so that nearby
// attempts spread apart.
func jitterUnit(id string, retries int32) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	_, _ = h.Write([]byte{0, byte(retries >> 24), byte(retries >> 16), byte(retries >> 8), byte(retries)})
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
