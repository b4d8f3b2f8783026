package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/partition"
	"github.com/amends-dev/amends/scheduler"
)

// The partitioned mode's settings that go together are checked together:
// each bad combination is a usage error naming the flags, and starts
// nothing.
func TestServeRefusesBadPartitionSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partitions"}, "--partitions needs --instance: a name unique among the instances, 1 to 64 of A-Z a-z 0-9 . _ -"},
		{[]string{"--partitions", "--instance", "a b"}, `--instance "a b" must be 1 to 64 of A-Z a-z 0-9 . _ -`},
		{[]string{"--partitions", "--instance", string(make([]byte, 65))}, "must be 1 to 64 of A-Z a-z 0-9 . _ -"},
		{[]string{"--partitions", "--instance", "a", "--scheduler=false"}, "--partitions needs the scheduler"},
		{[]string{"--partitions", "--instance", "a", "--partitions-query-timeout", "10ms"}, "--partitions-query-timeout must be between 100ms and 1m, got 10ms"},
		{[]string{"--partitions", "--instance", "a", "--partitions-query-timeout", "2m"}, "--partitions-query-timeout must be between 100ms and 1m, got 2m"},
	} {
		dir := t.TempDir()
		var c cli
		code := c.run(t, append([]string{"serve", "--data-dir", filepath.Join(dir, "data"), "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v: stderr:\n%s", tc.args, c.stderr.String())
		assert.Contains(t, c.stderr.String(), tc.want, tc.args)
		assert.NoDirExists(t, filepath.Join(dir, "data"), "%v: nothing starts", tc.args)
	}
}

// shop creates n FAILED records of processors P0..P5 on js, and returns
// their ids.
func shop(t *testing.T, svc *aggregate.Service, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		fn := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: fmt.Sprint("P", i%6), Name: "onOrder"}
		evt := fmt.Sprintf("evt-%03d", i)
		id := aggregate.RecordID(evt, fn)
		_, err := svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:   aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "shop", AggregateName: "order", AggregateID: "o-" + evt, TenantID: aggregate.DefaultTenantID}, Version: 1},
			Function:  fn,
			Error:     aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "boom"},
			ExecuteAt: time.Now().UnixMilli(),
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// listAll lists every record through c, pages of 7.
func listAll(ctx context.Context, c *client.Client, f api.Filter) ([]string, error) {
	var ids []string
	q := api.Query{Filter: f, Limit: 7}
	for {
		page, err := c.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			ids = append(ids, it.ID)
		}
		if page.Next == "" {
			slices.Sort(ids)
			return ids, nil
		}
		q.Cursor = page.Next
	}
}

// missing reports whether err is the API's answer that partitions are
// missing.
func missing(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == 503 && e.Body.Code == "PartitionsMissing"
}

// Two serve instances with --partitions on one NATS server split the
// records (the plan places partitions on both) and each answers every
// query as one index of every record: counts, summaries, every page of a
// listing. A command through one is read at once through the other. Once
// one stops, the other answers for every record; meanwhile no answer is
// short without saying so.
func TestServeInstancesSplitTheRecordsAndAnswerAsOne(t *testing.T) {
	srv := natstest.NewListening(t)
	_, js := srv.Connect()
	store, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context))
	require.NoError(t, err)
	ids := shop(t, aggregate.NewService(store), 90)

	start := func(name string) (*running, *client.Client) {
		var c cli
		// No pass within the test: the records stay FAILED until prepared
		// by the test.
		r := c.startServe(t, "serve", "--nats-url", srv.ClientURL(), "--partitions", "--instance", name, "--lease-ttl", "3s", "--scheduler-initial-delay", "24h")
		cl, err := client.New(r.info.HTTPURL, "", nil)
		require.NoError(t, err)
		return r, cl
	}
	ra, a := start("a")
	rb, b := start("b")
	ctx := t.Context()
	whole := func(c *client.Client) bool {
		n, err := c.Count(ctx, api.Filter{})
		require.True(t, err == nil || missing(err), "an answer, or the partitions missing: %v", err)
		require.True(t, err != nil || n == len(ids) || n == 0, "never short without saying so: %d", n)
		return err == nil && n == len(ids)
	}
	plans, err := scheduler.OpenPartitions(ctx, js, 1)
	require.NoError(t, err)
	var plan partition.Plan
	testwait.For(t, "the plan places partitions on both, and both answer for every record", func() bool {
		plan, _, err = plans.Get(ctx, "plan")
		return err == nil && len(plan.Held("a")) > 0 && len(plan.Held("b")) > 0 && whole(a) && whole(b)
	})

	// answer asks again while the answer names partitions missing: the
	// plan can change once more after both answered whole (the sizes the
	// instances report split a processor), and a partition that moves is
	// named missing until its new holder has loaded it, never left out.
	answer := func(what string, ask func() error) {
		t.Helper()
		testwait.For(t, what, func() bool {
			err := ask()
			require.True(t, err == nil || missing(err), "%s: %v", what, err)
			return err == nil
		})
	}
	for _, c := range []*client.Client{a, b} {
		var got []string
		answer("a listing of every record", func() (err error) { got, err = listAll(ctx, c, api.Filter{}); return err })
		require.Equal(t, ids, got, "every record once, over pages")
		var sum api.Summary
		answer("a summary", func() (err error) { sum, err = c.Summary(ctx, api.Filter{}); return err })
		require.Equal(t, len(ids), sum.Total)
		require.Len(t, sum.Groups, 6)
		var byFp api.Summary
		answer("the summary by fingerprint, across the instances too", func() (err error) { byFp, err = c.SummaryByFingerprint(ctx, api.Filter{}); return err })
		require.Equal(t, len(ids), byFp.Total)
	}

	// A record of a partition b holds, prepared through a, is read at once
	// through b: the command waited for b's index.
	var onB string
	for _, id := range ids {
		v, err := a.Get(ctx, id)
		require.NoError(t, err)
		if plan.Owners[plan.Of(v.State.Function.ProcessorName, id)] == "b" {
			onB = id
			break
		}
	}
	require.NotEmpty(t, onB)
	_, err = a.Prepare(ctx, onB, client.CommandOptions{})
	require.NoError(t, err)
	for _, c := range []*client.Client{b, a} {
		var got []string
		answer("the prepared record", func() (err error) {
			got, err = listAll(ctx, c, api.Filter{Status: aggregate.StatusPrepared})
			return err
		})
		require.Equal(t, []string{onB}, got)
	}

	require.Equal(t, exitOK, rb.stop(t))
	testwait.For(t, "a answers for every record alone", func() bool { return whole(a) })
	var got []string
	answer("a listing of every record at a alone", func() (err error) { got, err = listAll(ctx, a, api.Filter{}); return err })
	require.Equal(t, ids, got)
	require.Equal(t, exitOK, ra.stop(t))
}

// A second serve with an instance's name does not start while the first
// runs: it waits for the name's member lease, and says so when its
// start-up time ends.
func TestServeRefusesAnInstanceNameInUse(t *testing.T) {
	srv := natstest.NewListening(t)
	var first cli
	first.startServe(t, "serve", "--nats-url", srv.ClientURL(), "--partitions", "--instance", "a", "--lease-ttl", "3s")
	var c cli
	code := c.run(t, "serve", "--nats-url", srv.ClientURL(), "--partitions", "--instance", "a", "--lease-ttl", "3s", "--startup-timeout", "5s", "--http", "127.0.0.1:0")
	require.Equal(t, exitFailure, code, "stderr:\n%s", c.stderr.String())
	require.Contains(t, c.stderr.String(), "amends: --instance a: another process holds this instance's name (its member lease): another serve with this --instance, or this one's last run until its lease (TTL 3s) expires\n")
	require.Equal(t, 1, strings.Count(c.stderr.String(), "level=WARN msg=\"another process holds this instance's name"), "said once while it waits")
}
