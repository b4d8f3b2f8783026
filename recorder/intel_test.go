package recorder_test

import (
	"context"
	"sync"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rules"
)

// capture is an Executor in front of the real service that keeps each
// command's meta.
type capture struct {
	svc  *aggregate.Service
	mu   sync.Mutex
	meta []aggregate.Meta
}

func (c *capture) Execute(ctx context.Context, id string, cmd aggregate.Command, m aggregate.Meta) (aggregate.Result, error) {
	c.mu.Lock()
	c.meta = append(c.meta, m)
	c.mu.Unlock()
	return c.svc.Execute(ctx, id, cmd, m)
}

func chargeFailed(order string) error {
	return crdb.Newf("charge of order %s failed: card declined", order)
}

func TestRecorderFingerprintsAndRules(t *testing.T) {
	ctx := t.Context()
	store, err := jsstore.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	exec := &capture{svc: aggregate.NewService(store, aggregate.WithClock(aggregate.ClockFunc(func() time.Time { return time.UnixMilli(t0 + 500) })))}

	first := func(rec *recorder.Recorder, event string, err error) aggregate.State {
		t.Helper()
		ev := eventID
		ev.ID = event
		out, rerr := rec.Record(ctx, processor.Execution{EventID: ev, Function: &fn, Err: err, ExecuteAt: time.UnixMilli(t0)})
		require.NoError(t, rerr)
		require.Equal(t, processor.OutcomeRecorded, out)
		st, _, gerr := exec.svc.Get(ctx, aggregate.RecordID(event, fn))
		require.NoError(t, gerr)
		return st
	}

	plain, err := recorder.New(exec, recorder.WithModule("github.com/amends-dev/amends"))
	require.NoError(t, err)
	a := first(plain, "evt-a", chargeFailed("42"))
	b := first(plain, "evt-b", chargeFailed("7"))
	require.True(t, fingerprint.Valid(a.Error.Fingerprint), "the record carries a fingerprint: %q", a.Error.Fingerprint)
	assert.Equal(t, a.Error.Fingerprint, b.Error.Fingerprint, "the same failure with other ids has one fingerprint")
	other := first(plain, "evt-c", crdb.New("charge of order 9 failed: card declined"))
	assert.NotEqual(t, a.Error.Fingerprint, other.Error.Fingerprint, "another call site, another fingerprint")

	set := rules.NewSet([]api.Rule{
		{ID: "r-000000000001", Match: api.RuleMatch{Fingerprint: a.Error.Fingerprint}, Action: rules.Waive, Reason: "known decline noise", CreatedAt: 1},
	})
	ruled, err := recorder.New(exec, recorder.WithModule("github.com/amends-dev/amends"), recorder.WithRules(set))
	require.NoError(t, err)
	w := first(ruled, "evt-d", chargeFailed("99"))
	assert.Equal(t, aggregate.Unrecoverable, w.Recoverable, "the waive rule acted at record time")
	assert.Equal(t, int32(0), w.RetrySpec.MaxRetries, "a waived record is never retried")
	assert.EqualValues(t, 1, ruled.Metrics().RuleMatches.Load())
	exec.mu.Lock()
	var found bool
	for _, m := range exec.meta {
		if m.Headers["rule"] == "r-000000000001" {
			found = true
			assert.Equal(t, "rule r-000000000001 (WAIVE): known decline noise", m.Reason)
		}
	}
	exec.mu.Unlock()
	assert.True(t, found, "the creation names the rule")
	n := first(ruled, "evt-e", crdb.New("charge of order 9 failed: card declined"))
	assert.Equal(t, aggregate.RecoverabilityUnknown, n.Recoverable, "a failure the rule does not match is left alone")
}
