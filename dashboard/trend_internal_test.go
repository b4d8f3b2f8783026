package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	h := newHub(2, 2)
	a, err := h.subscribe("ann")
	assert.NoError(t, err)
	h.publish([]byte("x"), true)
	b, err := h.subscribe("bob")
	assert.NoError(t, err)
	assert.Equal(t, []byte("x"), <-b, "a new stream gets the last counts first")
	_, err = h.subscribe("cyd")
	assert.ErrorIs(t, err, errTooManyStreams, "at most 2 streams")
	h.close()
	assert.Equal(t, []byte("x"), <-a)
	_, open := <-a
	assert.False(t, open)
	_, open = <-b
	assert.False(t, open)
	_, err = h.subscribe("ann")
	assert.ErrorIs(t, err, errHubClosed)
	h.unsubscribe(a) // after close: no double close
}

// Finding 6 of "authentication never falls open": one client could take
// every live stream. A principal has at most its own share; closing one
// of its streams (or one falling behind) frees it; the others' streams
// are not counted against it.
func TestHubCapsTheStreamsOfOnePrincipal(t *testing.T) {
	h := newHub(5, 2)
	a1, err := h.subscribe("ann")
	require.NoError(t, err)
	_, err = h.subscribe("ann")
	require.NoError(t, err)
	_, err = h.subscribe("ann")
	assert.ErrorIs(t, err, errTooManyOfYours, "ann's third")
	_, err = h.subscribe("bob")
	assert.NoError(t, err, "bob is not ann")
	h.unsubscribe(a1)
	a3, err := h.subscribe("ann")
	assert.NoError(t, err, "a closed stream is freed")
	for range 65 { // a3 is not read: it falls behind and is closed
		h.publish([]byte("x"), false)
	}
	_, open := <-a3
	for open {
		_, open = <-a3
	}
	_, err = h.subscribe("ann")
	assert.NoError(t, err, "so is one that fell behind")
}
