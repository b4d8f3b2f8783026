package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
)

// On a replicated stream any replica may answer a direct get, and a
// follower may not have applied the latest write yet. Commands must still
// never decide on a state older than one committed before them: create,
// prepare and apply-success back to back, through one Service and through
// Services on three different nodes, must all be accepted, and a Get right
// after an acknowledged prepare must return it.
func TestCommandsOnReplicatedStreamNeverDecideOnStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const perNode = 1000 // records per node: 3 000 commands per node
	c := natstest.NewCluster(t, 3)
	svcs := make([]*aggregate.Service, 3)
	stores := make([]*jsstore.Store, 3)
	for i := range svcs {
		_, js := c.ConnectNode(i)
		st, err := jsstore.New(js, jsstore.WithReplicas(3))
		require.NoError(t, err)
		require.NoError(t, st.Provision(t.Context(), aggregate.Context))
		svcs[i], stores[i] = aggregate.NewService(st), st
	}
	defer func() {
		for i, st := range stores {
			t.Logf("node %d: %d reads found a lagging replica", i, st.LaggingReads())
		}
	}()

	var (
		mu       sync.Mutex
		failures []string
		stale    int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for node := range svcs {
		wg.Go(func() {
			for r := range perNode {
				// Even records go through one Service; odd ones move from
				// node to node, so each command is read by a process that
				// did not write the record's last version.
				create, prepare, apply := svcs[node], svcs[node], svcs[node]
				if r%2 == 1 {
					prepare, apply = svcs[(node+1)%3], svcs[(node+2)%3]
				}
				if err := lifecycle(t.Context(), fmt.Sprintf("n%d-r%04d", node, r), create, prepare, apply); err != nil {
					if errors.Is(err, errStaleGet) {
						mu.Lock()
						stale++
						mu.Unlock()
					}
					fail("node %d record %d: %v", node, r, err)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, stale, "Get right after an acknowledged prepare returned an older version")
	assert.Empty(t, failures, "commands rejected or failed although the committed state accepts them")
}

var errStaleGet = errors.New("stale get")

// lifecycle creates record id, prepares it, checks that the preparing
// Service reads its own write, and applies a success.
func lifecycle(ctx context.Context, id string, create, prepare, apply *aggregate.Service) error {
	evt := "evt-" + id
	res, err := create.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + id, TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:  aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "order", ProcessorName: "Mailer", Name: "onOrderPlaced"},
		Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "smtp: i/o timeout"},
		ExecuteAt: t0,
	}, aggregate.Meta{Actor: "recorder"})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	res, err = prepare.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "scheduler"})
	if err != nil {
		return fmt.Errorf("prepare version %d: %w", res.Version+1, err)
	}
	_, v, err := prepare.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("get after prepare: %w", err)
	}
	if v != res.Version {
		return fmt.Errorf("get after prepare at version %d returned version %d: %w", res.Version, v, errStaleGet)
	}
	_, err = apply.Execute(ctx, id, aggregate.ApplyExecutionSuccess{
		ExecuteAt: t0 + 1, Attempt: res.State.Attempt(), PreparedVersion: res.Version,
	}, aggregate.Meta{Actor: "recorder"})
	if err != nil {
		return fmt.Errorf("apply success: %w", err)
	}
	return nil
}
