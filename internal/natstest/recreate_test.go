package natstest_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/natstest"
)

// Recreate asks again while the server says the deleted stream's store is
// still there, and returns what the first successful call made.
func TestRecreateWaitsForTheDeletedStore(t *testing.T) {
	calls := 0
	got := natstest.Recreate(t, func() (int, error) {
		calls++
		if calls < 3 {
			return 0, fmt.Errorf("bucket b: %w", &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"})
		}
		return 42, nil
	})
	assert.Equal(t, 42, got)
	assert.Equal(t, 3, calls)
}
