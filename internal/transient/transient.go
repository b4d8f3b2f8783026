// Package transient tells the JetStream errors an election or a lost
// server causes, which go away on their own, from the ones that do not,
// and retries an operation through the former: start-up (stream, consumer
// and bucket provisioning) uses it to ride out a leader election.
package transient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/wait"
)

// codes are the JetStream API error codes of a cluster without a leader
// or with a peer missing for a while.
var codes = map[jetstream.ErrorCode]bool{
	10004: true, // incomplete results
	10005: true, // no suitable peers for placement (a server is down)
	10008: true, // JetStream system temporarily unavailable (no meta leader)
	10009: true, // JetStream cluster can not handle request (not the leader)
	10118: true, // stream is offline
	10119: true, // consumer is offline
	10163: true, // expected last sequence per subject temporarily unavailable
	10194: true, // stream is offline: reason
	10195: true, // consumer is offline: reason
}

// Is reports whether err is transient: a request that timed out, found no
// responder, lost its heartbeat or its connection for a while, or a
// JetStream API error of a cluster that has no leader for now. A context
// that was canceled is not transient; nor is an API error of a refused
// configuration.
func Is(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrNoServers) {
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return codes[api.ErrorCode]
	}
	return false
}

// Backoff bounds of Retry, and the longest a single attempt may take.
const (
	firstBackoff   = 100 * time.Millisecond
	maxBackoff     = 2 * time.Second
	AttemptTimeout = 5 * time.Second
	// NoRespondersGrace is how long Retry retries a request that found no
	// responder: a server whose JetStream is starting answers within it; a
	// server without JetStream never does, and should fail start-up soon.
	NoRespondersGrace = 5 * time.Second
)

// Retry calls op until it returns nil or an error that is not transient
// (Is), waiting between attempts from 100 ms, doubling, up to 2 s. Each
// attempt gets a context of its own bounded by AttemptTimeout, so one
// unanswered request does not use up ctx; no responders is retried for
// NoRespondersGrace only. A transient failure is logged
// at WARN with what, what Retry is waiting for. Retry returns nil, op's
// error that is not transient, or, once ctx ends, the last error wrapped
// with how long it tried. Safe for concurrent use.
func Retry(ctx context.Context, logger *slog.Logger, what string, op func(ctx context.Context) error) error {
	start := time.Now()
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		err := op(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				logger.Info("start-up: ready after retries", "waited_for", what, "attempts", attempt, "after", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: gave up after %d attempts in %s: %w", what, attempt, time.Since(start).Round(time.Millisecond), err)
		}
		if !Is(err) || errors.Is(err, nats.ErrNoResponders) && time.Since(start) >= NoRespondersGrace {
			return err
		}
		logger.Warn("start-up: waiting for JetStream (an election or a lost server?); retrying", "waiting_for", what, "attempt", attempt, "retry_in", backoff, "err", err)
		if wait.Sleep(ctx, backoff) != nil {
			return fmt.Errorf("%s: gave up after %d attempts in %s: %w", what, attempt, time.Since(start).Round(time.Millisecond), err)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
