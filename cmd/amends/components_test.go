package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
)

var discard = slog.New(slog.DiscardHandler)

// waiter is a component that runs until its context ends.
func waiter(name string, stopped chan<- string) component {
	return component{name: name, run: func(ctx context.Context) error {
		<-ctx.Done()
		stopped <- name
		return ctx.Err()
	}}
}

func TestRunComponentsStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan string, 2)
	done := make(chan error, 1)
	go func() { done <- runComponents(ctx, discard, waiter("a", stopped), waiter("b", stopped)) }()
	cancel()
	require.NoError(t, recv(t, done, "return of runComponents"))
	assert.ElementsMatch(t, []string{"a", "b"}, []string{recv(t, stopped, "stop"), recv(t, stopped, "stop")}, "every component must have stopped when runComponents returns")
}

func TestRunComponentsWithoutComponentsWaitsForContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- runComponents(ctx, discard) }()
	cancel()
	require.NoError(t, recv(t, done, "return of runComponents"))
}

func TestRunComponentsFailureStopsTheOthers(t *testing.T) {
	stopped := make(chan string, 1)
	boom := errors.New("boom")
	err := runComponents(t.Context(), discard,
		waiter("projection", stopped),
		component{name: "scheduler", run: func(context.Context) error { return boom }},
	)
	require.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "scheduler: boom")
	assert.Equal(t, "projection", recv(t, stopped, "stop of the projection"))
}

func TestRunComponentsEarlyReturnIsAFailure(t *testing.T) {
	err := runComponents(t.Context(), discard, component{name: "http", run: func(context.Context) error { return nil }})
	assert.EqualError(t, err, "http: stopped before shutdown")
}

func TestServeStopsWhenItsNATSConnectionIsClosedForGood(t *testing.T) {
	nc, _ := natstest.New(t).Connect()
	done := make(chan error, 1)
	go func() { done <- watchClosed(t.Context(), nc, 5*time.Millisecond) }()
	nc.Close()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the NATS connection was closed and will not reconnect")
	case <-time.After(waitLimit):
		t.Fatal("watchClosed did not notice the closed connection")
	}

	nc2, _ := natstest.New(t).Connect()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- watchClosed(ctx, nc2, 5*time.Millisecond) }()
	cancel()
	assert.NoError(t, <-done, "a stop is not a failure")
}
