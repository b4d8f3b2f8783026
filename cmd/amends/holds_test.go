package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/server"
)

// orderedCLI is an API with holds and range replays, and a processor of
// context shop whose Ordered function Projector.onStep fails on version 1
// of every order; it returns an operator's command line.
func orderedCLI(t *testing.T) (*apiEnv, func() *cli) {
	t.Helper()
	e := newAPIEnv(t)
	require.NoError(t, e.store.Provision(t.Context(), "shop"))
	ordering, err := openOrdering(t.Context(), e.js, e.store, e.svc, nil, 1)
	require.NoError(t, err)
	tokens, err := server.ParseTokens("bob:operator:" + operatorKey)
	require.NoError(t, err)
	h := httptest.NewServer(server.New(server.Config{Queries: e.index, Commands: e.svc, Tokens: tokens, Clock: e.clock, Ordering: ordering}).Handler())
	t.Cleanup(h.Close)
	rec, err := recorder.New(e.svc)
	require.NoError(t, err)
	p, err := processor.New(e.js, e.store, "shop", processor.WithRecorder(rec), processor.WithRecords(e.svc), processor.WithRangeReplays())
	require.NoError(t, err)
	require.NoError(t, p.Register(processor.Function{Processor: "Projector", Name: "onStep", AggregateTypes: []string{"order"}},
		func(_ context.Context, d *processor.Delivery) error {
			if d.Stream.Version == 1 {
				return errors.New("boom")
			}
			return nil
		}, processor.Ordered()))
	runCtx, stopRun := context.WithCancel(t.Context())
	require.NoError(t, p.Start(runCtx))
	t.Cleanup(func() { stopRun(); _ = p.Wait() })
	return e, func() *cli { return &cli{env: map[string]string{"AMENDS_SERVER": h.URL, "AMENDS_TOKEN": operatorKey}} }
}

func emit(t *testing.T, e *apiEnv, id string, v uint64) eventstore.Stream {
	t.Helper()
	st, err := e.store.Append(t.Context(), eventstore.Stream{ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: id}, CreateTime: t0,
		Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: json.RawMessage(`{}`)}}}, v-1)
	require.NoError(t, err)
	return st
}

// holds list, show, skip and release with dry runs, end to end.
func TestHoldsCommands(t *testing.T) {
	e, newCLI := orderedCLI(t)
	v1 := emit(t, e, "o-1", 1)
	v2 := emit(t, e, "o-1", 2)
	emit(t, e, "o-1", 3)
	key := api.HoldKey("shop", "Projector", "onStep", "order", "o-1")
	require.Eventually(t, func() bool {
		c := newCLI()
		return c.run(t, "holds", "list", "--context", "shop") == 0 && strings.Contains(c.stdout.String(), "2..3")
	}, 30*time.Second, 20*time.Millisecond, "the list shows versions 2..3 held")
	head := aggregate.RecordID(v1.Events[0].ID, aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Projector", Name: "onStep"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.index.WaitFor(ctx, head, 1))

	c := newCLI()
	require.Equal(t, 0, c.run(t, "show", head), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "holds: 2 later events of order/o-1 held behind this record (versions 2..3)")

	c = newCLI()
	assert.Equal(t, exitUsage, c.run(t, "holds", "skip", key, v2.Events[0].ID), "a skip needs --reason")
	c = newCLI()
	require.Equal(t, 0, c.run(t, "holds", "skip", key, v2.Events[0].ID, "--reason", "dup", "--dry-run"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "would skip event "+v2.Events[0].ID)
	c = newCLI()
	assert.Equal(t, exitUsage, c.run(t, "holds", "skip", key, v2.Events[0].ID, "--reason", "dup"), "a skip needs --yes, as a release does")
	c = newCLI()
	require.Equal(t, 0, c.run(t, "holds", "skip", key, v2.Events[0].ID, "--reason", "dup", "--yes"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "1 events stay held")

	c = newCLI()
	require.Equal(t, 0, c.run(t, "holds", "release", key, "--reason", "fixed by hand", "--dry-run"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "would release "+key+": 1 held events in order; head record "+head+": force_prepare_compensation then apply_execution_success")
	c = newCLI()
	assert.Equal(t, exitUsage, c.run(t, "holds", "release", key, "--reason", "fixed by hand"), "a bulk command needs --yes or --dry-run")
	require.Equal(t, 0, c.run(t, "holds", "release", key, "--reason", "fixed by hand", "--yes"), c.stderr.String())
	require.Eventually(t, func() bool {
		c := newCLI()
		return c.run(t, "holds", "list", "--context", "shop") == 0 && strings.Contains(c.stdout.String(), "nothing held")
	}, 30*time.Second, 20*time.Millisecond)
}

// replay with a dry run, then for real with a progress bar, then again
// with the same request id.
func TestReplayCommand(t *testing.T) {
	e, newCLI := orderedCLI(t)
	emit(t, e, "o-2", 1)
	emit(t, e, "o-2", 2)
	args := []string{"replay", "--context", "shop", "--aggregate", "order/o-2", "--from", "2", "--to", "2", "--function", "Projector.onStep", "--reason", "re-project"}
	c := newCLI()
	assert.Equal(t, exitUsage, c.run(t, "replay", "--context", "shop", "--aggregate", "order/o-2", "--from", "3", "--to", "2", "--function", "Projector.onStep", "--reason", "r"))
	assert.Contains(t, c.stderr.String(), "must not be before the first")
	c = newCLI()
	require.Equal(t, 0, c.run(t, append(args, "--dry-run")...), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "dry run: 1 events would be replayed")
	c = newCLI()
	assert.Equal(t, exitUsage, c.run(t, append(args, "--request-id", "r-1")...), "a bulk command needs --yes or --dry-run")
	assert.Contains(t, c.stderr.String(), "replay needs --dry-run (to see what it would do) or --yes (to do it), not neither")
	c = newCLI()
	require.Equal(t, 0, c.run(t, append(args, "--dry-run", "-o", "json")...), c.stderr.String())
	var started api.ReplayStarted
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &started), "the API's shape")
	require.NotNil(t, started.Plan, "the plan under \"plan\", as the API sends it: %s", c.stdout.String())
	assert.Equal(t, 1, started.Plan.Count)
	c = newCLI()
	require.Equal(t, 0, c.run(t, append(args, "--request-id", "r-1", "--poll", "20ms", "--yes")...), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "replay r-1 DONE: 1 events replayed, 0 failed")
	assert.Contains(t, c.stderr.String(), "[==============================] 100% DONE")
	c = newCLI()
	require.Equal(t, 0, c.run(t, append(args, "--request-id", "r-1", "--yes")...), c.stderr.String())
	assert.Contains(t, c.stderr.String(), "replay r-1 was sent before")
}
