package circuit_test

import (
	"context"
	"testing"
	"time"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/fakeclock"
)

// BenchmarkClosedCall is what a circuit adds to each call of a healthy
// function: Allow and a successful Done on a closed circuit, from
// parallel goroutines (the lanes), against an empty loop.
func BenchmarkClosedCall(b *testing.B) {
	clock := fakeclock.At(t0.UnixMilli())
	set := circuit.NewSet(nil, mailer.Context, "i1", quiet(), clock)
	br, err := set.Breaker(mailer, circuit.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("floor", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = time.Now()
			}
		})
	})
	b.Run("circuit", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				now := time.Now()
				t, refused := br.Allow(ctx, now, circuit.Call{})
				if refused != nil {
					b.Fatal("refused")
				}
				br.Done(ctx, now, t, circuit.Outcome{})
			}
		})
	})
}
