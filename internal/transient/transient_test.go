package transient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/transient"
)

func apiErr(code jetstream.ErrorCode, status int) error {
	return fmt.Errorf("create stream: %w", &jetstream.APIError{ErrorCode: code, Code: status, Description: "x"})
}

func TestIs(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                        {nil, false},
		"deadline":                   {fmt.Errorf("open bucket: %w", context.DeadlineExceeded), true},
		"canceled":                   {fmt.Errorf("open bucket: %w", context.Canceled), false},
		"timeout":                    {nats.ErrTimeout, true},
		"no responders":              {fmt.Errorf("x: %w", nats.ErrNoResponders), true},
		"no heartbeat":               {jetstream.ErrNoHeartbeat, true},
		"reconnecting":               {nats.ErrConnectionReconnecting, true},
		"no meta leader (10008)":     {apiErr(10008, 503), true},
		"not leader (10009)":         {apiErr(10009, 500), true},
		"stream offline (10118)":     {apiErr(10118, 500), true},
		"no peers (10005)":           {apiErr(10005, 400), true},
		"stream name in use":         {apiErr(jetstream.JSErrCodeStreamNameInUse, 400), false},
		"replicas unsupported":       {apiErr(10074, 500), false},
		"not enabled for account":    {jetstream.ErrJetStreamNotEnabledForAccount, false},
		"jetstream not enabled":      {jetstream.ErrJetStreamNotEnabled, false},
		"bucket exists":              {jetstream.ErrBucketExists, false},
		"an incompatible bucket":     {errors.New("KV bucket exists with replicas 1 (wanted 3)"), false},
		"connection closed for good": {nats.ErrConnectionClosed, false},
	} {
		assert.Equal(t, c.want, transient.Is(c.err), name)
	}
}

func TestRetry(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("through transient errors", func(t *testing.T) {
		n := 0
		err := transient.Retry(t.Context(), log, "the test", func(ctx context.Context) error {
			if n++; n < 3 {
				return apiErr(10008, 503)
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, 3, n)
	})
	t.Run("a permanent error at once", func(t *testing.T) {
		n := 0
		bad := apiErr(jetstream.JSErrCodeStreamNameInUse, 400)
		err := transient.Retry(t.Context(), log, "the test", func(ctx context.Context) error { n++; return bad })
		require.ErrorIs(t, err, bad)
		assert.Equal(t, 1, n)
	})
	t.Run("until ctx ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		err := transient.Retry(ctx, log, "the bucket", func(ctx context.Context) error { return nats.ErrTimeout })
		require.ErrorIs(t, err, nats.ErrTimeout)
		assert.Contains(t, err.Error(), "the bucket: gave up after")
	})
	t.Run("each attempt is bounded", func(t *testing.T) {
		err := transient.Retry(t.Context(), log, "x", func(ctx context.Context) error {
			_, ok := ctx.Deadline()
			assert.True(t, ok, "the attempt has a deadline")
			return nil
		})
		require.NoError(t, err)
	})
}
