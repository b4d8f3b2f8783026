package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The trend keeps the last samples, oldest first, dropping the oldest
// once full.
func TestTrendKeepsTheLastHour(t *testing.T) {
	tr := newTrend(3)
	assert.Empty(t, tr.samples())
	for i := range 5 {
		tr.add(Sample{At: int64(i), Due: i})
		want := []Sample{}
		for j := max(0, i-2); j <= i; j++ {
			want = append(want, Sample{At: int64(j), Due: j})
		}
		assert.Equal(t, want, tr.samples(), "after %d samples", i+1)
	}
	assert.Equal(t, 60, trendSamples, "an hour of one-minute samples")
}

// Closing the hub ends every stream and refuses new ones, so that a
// server shutting down is not held by open dashboards.
func TestHubCloseEndsStreams(t *testing.T) {
	h := newHub(2)
	a, ok := h.subscribe()
	assert.True(t, ok)
	h.publish([]byte("x"), true)
	b, ok := h.subscribe()
	assert.True(t, ok)
	assert.Equal(t, []byte("x"), <-b, "a new stream gets the last counts first")
	_, ok = h.subscribe()
	assert.False(t, ok, "at most 2 streams")
	h.close()
	assert.Equal(t, []byte("x"), <-a)
	_, open := <-a
	assert.False(t, open)
	_, open = <-b
	assert.False(t, open)
	_, ok = h.subscribe()
	assert.False(t, ok)
	h.unsubscribe(a) // after close: no double close
}
