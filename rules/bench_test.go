package rules_test

import (
	"fmt"
	"testing"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/rules"
)

// BenchmarkSetMatch is the recorder's cost per failure of matching it
// against the loaded rules (none matches, so both look-ups run).
func BenchmarkSetMatch(b *testing.B) {
	for _, n := range []int{0, 1000} {
		list := make([]api.Rule, 0, n)
		for i := range n {
			r := api.Rule{ID: fmt.Sprintf("r-%012x", i), Action: rules.MarkUnrecoverable, CreatedAt: int64(i)}
			if i%2 == 0 {
				r.Match.Fingerprint = fmt.Sprintf("fp1-%016x", i)
			} else {
				r.Match = api.RuleMatch{FunctionContext: "shop", Processor: fmt.Sprintf("P%d", i), Function: "charge", ErrorCode: "X"}
			}
			list = append(list, r)
		}
		set := rules.NewSet(list)
		x := rules.Failure{Function: fn, ErrorCode: "Timeout", Fingerprint: fpB}
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, ok := set.Match(x, t0); ok {
					b.Fatal("matched")
				}
			}
		})
	}
}
