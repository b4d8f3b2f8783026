package processor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/processor"
)

// A consumer deleted while the processor runs is created again, and the
// events that follow are handled.
func TestProcessorRecreatesADeletedConsumer(t *testing.T) {
	e := newEnv(t)
	mailer := newCounter()
	p := e.processor()
	require.NoError(t, p.Register(fn("Mailer", "onPlaced"), mailer.handle))
	run(t, p)
	select {
	case <-p.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the processor did not start")
	}
	first := e.emit(order("o-1"), 1, ev("order_placed", struct{}{})).Events[0].ID
	require.Eventually(t, func() bool { return mailer.count(first) >= 1 }, 30*time.Second, tick, "the first event is handled")

	require.NoError(t, e.js.DeleteConsumer(t.Context(), e.store.StreamName(ctxName), processor.DurableName(ctxName, "Mailer")))
	second := e.emit(order("o-2"), 1, ev("order_placed", struct{}{})).Events[0].ID
	require.Eventually(t, func() bool { return mailer.count(second) >= 1 }, 30*time.Second, tick, "an event after the consumer was deleted is handled")
}
