package recorder

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFinalFailuresAreCappedByFunction(t *testing.T) {
	var f FinalFailures
	for i := range MaxFinalFailureFunctions + 50 {
		f.add(fmt.Sprintf("P.fn%d", i))
	}
	f.add("P.fn0")
	c := f.Counts()
	assert.Len(t, c, MaxFinalFailureFunctions+1, "the cap plus the overflow bucket")
	assert.Equal(t, uint64(50), c[OtherFunctions], "functions beyond the cap are counted together")
	assert.Equal(t, uint64(2), c["P.fn0"], "a known function keeps counting")
	assert.Equal(t, uint64(MaxFinalFailureFunctions+51), f.Total())
}
