package testwait_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/testwait"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	testwait.For(t, "three polls", func() bool { return n.Add(1) >= 3 })
	assert.Equal(t, int32(3), n.Load())
}

// fatal records a failure instead of stopping the test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestWithinFailsAfterItsDeadline(t *testing.T) {
	f := &fatal{TB: t}
	func() {
		defer func() { assert.Same(t, f, recover()) }()
		testwait.Within(f, 20*time.Millisecond, "never", func() bool { return false })
	}()
	assert.Contains(t, f.msg, "in vain")
}
