package processor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
)

// List sees every hold while holds change: a KV watch's own end signal
// came early then, and List returned only the holds not written meanwhile
// (the kill loop's "every hold released" check passed while releases ran).
func TestHoldsListSeesHoldsChangedMeanwhile(t *testing.T) {
	js := natstest.New(t).JetStream()
	hs, err := processor.OpenHolds(t.Context(), js, 1)
	require.NoError(t, err)
	kv, err := js.KeyValue(t.Context(), processor.HoldBucket)
	require.NoError(t, err)
	val := func(i, n int) []byte {
		return fmt.Appendf(nil, `{"context":"shop","processor":"P","function":"f","aggregateType":"order","aggregateId":"o-%d","head":{"eventId":"e","record":"r","version":1,"since":1},"held":[],"n":%d}`, i, n)
	}
	key := func(i int) string { return processor.HoldKey("shop", "P", "f", "order", fmt.Sprintf("o-%d", i)) }
	for i := range 20 {
		_, err := kv.Put(t.Context(), key(i), val(i, 0))
		require.NoError(t, err)
		if i < 15 {
			require.NoError(t, kv.Delete(t.Context(), key(i)))
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := 15; i < 20; i++ {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				_, _ = kv.Put(ctx, key(i), val(i, n))
			}
		})
	}
	short := 0
	for range 30 {
		list, _, err := hs.List(t.Context(), processor.HoldFilter{Context: "shop"}, processor.MaxHoldList)
		require.NoError(t, err)
		if len(list) != 5 {
			short++
		}
	}
	cancel()
	wg.Wait()
	require.Zero(t, short, "lists that missed a hold")
}
