package notify

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
)

func (p *RetryPolicy) validate() error {
	if p.Attempts == 0 {
		p.Attempts = DefaultAttempts
	}
	if !bounds.Within(p.Attempts, 1, MaxAttempts) {
		return fmt.Errorf("attempts: %d is outside 1 to %d", p.Attempts, MaxAttempts)
	}
	if p.First == nil {
		p.First = &Duration{DefaultFirstDelay}
	}
	if p.Max == nil {
		p.Max = &Duration{max(DefaultMaxDelay, p.First.Duration)}
	}
	if f := p.First.Duration; f < 10*time.Millisecond || f > time.Minute {
		return fmt.Errorf("first: %s is outside 10ms to 1m", f)
	}
	if m := p.Max.Duration; m < p.First.Duration || m > 10*time.Minute {
		return fmt.Errorf("max: %s is outside first (%s) to 10m", m, p.First.Duration)
	}
	return nil
}

// delay is the wait after the failed attempt n (1-based): first·2^(n-1),
// capped at max, then jittered uniformly by ±20 % (r draws in [0, 1)).
func (p *RetryPolicy) delay(n int, r func() float64) time.Duration {
	d := p.First.Duration
	for i := 1; i < n && d < p.Max.Duration; i++ {
		d *= 2
	}
	d = min(d, p.Max.Duration)
	if r == nil {
		r = rand.Float64
	}
	return time.Duration(float64(d) * (0.8 + 0.4*r()))
}
