package inflight

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/natstest"
)

// A lane hands over what has queued up, at most size at a time, oldest
// first, and drops each message from the held set once its batch is
// handled.
func TestLaneBatchesWhatHasQueuedUp(t *testing.T) {
	work := make(chan jetstream.Msg, 10)
	held := New()
	var want []string
	for i := range 10 {
		m := &natstest.Msg{Subj: fmt.Sprint(i)}
		want = append(want, m.Subj)
		held.Add(m)
		work <- m
	}
	close(work)
	var sizes []int
	var got []string
	lane(context.Background(), work, 4, held, func(_ context.Context, msgs []jetstream.Msg) {
		sizes = append(sizes, len(msgs))
		for _, m := range msgs {
			got = append(got, m.Subject())
		}
		assert.Equal(t, 10-len(got)+len(msgs), held.Len(), "a batch's messages are held while it is handled")
	})
	assert.Equal(t, []int{4, 4, 2}, sizes)
	assert.Equal(t, want, got, "in order")
	assert.Zero(t, held.Len())
}
