package quarantine

import "time"

// Retry is how a consumer retries a message that failed with an error that
// may be transient: redelivered after Delay(deliveries), growing from
// First, doubled with each delivery, up to Max; and quarantined once
// Exhausted. The zero value is DefaultRetry.
type Retry struct {
	// First is the delay after the first delivery (default 1s).
	First time.Duration
	// Max caps the delay (default 1m).
	Max time.Duration
	// Deliveries is how many deliveries a message gets before it is
	// quarantined (default 20: about a quarter of an hour with the default
	// delays).
	Deliveries uint64
}

// DefaultRetry is the policy of the zero Retry.
var DefaultRetry = Retry{First: time.Second, Max: time.Minute, Deliveries: 20}

func (r Retry) orDefault() Retry {
	if r.First <= 0 {
		r.First = DefaultRetry.First
	}
	if r.Max <= 0 {
		r.Max = DefaultRetry.Max
	}
	if r.Max < r.First {
		r.Max = r.First
	}
	if r.Deliveries == 0 {
		r.Deliveries = DefaultRetry.Deliveries
	}
	return r
}

// Delay returns how long a message delivered `delivered` times waits
// before it is delivered again: First·2^(delivered-1), at most Max.
func (r Retry) Delay(delivered uint64) time.Duration {
	r = r.orDefault()
	d := r.First
	for i := uint64(1); i < delivered && d < r.Max; i++ {
		d *= 2
	}
	return min(d, r.Max)
}

// Exhausted reports whether a message delivered `delivered` times must not
// be retried again, but quarantined.
func (r Retry) Exhausted(delivered uint64) bool {
	return delivered >= r.orDefault().Deliveries
}
