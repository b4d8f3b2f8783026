// Package fakeclock is a settable clock for tests: it satisfies
// aggregate.Clock and tells the time it was last set to.
package fakeclock

import (
	"sync/atomic"
	"time"
)

// Clock tells the time it was set to, at millisecond precision (the
// precision of every time amends stores). Safe for concurrent use.
type Clock struct{ ms atomic.Int64 }

// At returns a clock set to ms, in epoch milliseconds.
func At(ms int64) *Clock {
	c := &Clock{}
	c.SetMillis(ms)
	return c
}

// Now returns the time the clock was set to.
func (c *Clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) { c.ms.Store(t.UnixMilli()) }

// SetMillis sets the clock to ms, in epoch milliseconds.
func (c *Clock) SetMillis(ms int64) { c.ms.Store(ms) }
