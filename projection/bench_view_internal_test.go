package projection

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/amends-dev/amends/api"
	"github.com/stretchr/testify/require"
)

// withStack gives v a failure as Go services record it: a quoted message
// and a multi-line stack trace, which encoding/json writes with escapes.
func withStack(v api.View) api.View {
	var st strings.Builder
	for i := range 12 {
		fmt.Fprintf(&st, "github.com/acme/shop/billing.(*Invoicer).step%d(...)\n\t/src/shop/billing/invoicer.go:%d +0x1f4\n", i, 100+i)
	}
	v.State.Error.ErrorMsg = `charge order "o-1": card declined: <insufficient funds>`
	v.State.Error.StackTrace = st.String()
	return v
}

// BenchmarkDecodeViewFields compares the fast path with decodeView on the
// same generated views: as randomView makes them, and with a quoted
// message and a 1 KB stack trace each. cpu-ns/op is the process's CPU
// time per view (garbage collection included), steadier than ns/op on a
// loaded machine.
func BenchmarkDecodeViewFields(b *testing.B) {
	sets := []struct {
		name    string
		encoded [][]byte
	}{{name: "plain"}, {name: "stack"}}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1024 {
		v := randomView(r, i)
		for j, v := range []api.View{v, withStack(v)} {
			data, err := appendView(&v)
			require.NoError(b, err)
			sets[j].encoded = append(sets[j].encoded, data)
		}
	}
	for _, set := range sets {
		size := 0
		for _, data := range set.encoded {
			size += len(data)
		}
		b.Run(set.name+"/fields", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size / len(set.encoded)))
			var out viewFields
			i := 0
			cpu := cpuTime()
			for b.Loop() {
				if !decodeViewFields(set.encoded[i%len(set.encoded)], &out) {
					b.Fatal("the fast path refused a generated view")
				}
				i++
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run(set.name+"/decodeView", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size / len(set.encoded)))
			i := 0
			cpu := cpuTime()
			for b.Loop() {
				if _, err := decodeView(set.encoded[i%len(set.encoded)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
