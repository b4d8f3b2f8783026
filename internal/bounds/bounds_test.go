package bounds_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/bounds"
)

func TestWithinIncludesBothEnds(t *testing.T) {
	assert.True(t, bounds.Within(1, 1, 3))
	assert.True(t, bounds.Within(3, 1, 3))
	assert.False(t, bounds.Within(0, 1, 3))
	assert.False(t, bounds.Within(4, 1, 3))
	assert.True(t, bounds.Within(time.Second, time.Second, time.Hour))
	assert.False(t, bounds.Within(math.NaN(), math.Inf(-1), math.Inf(1)), "NaN is within nothing")
	assert.False(t, bounds.Within("b", "c", "d"))
}
