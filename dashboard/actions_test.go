package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/dashboard"
)

// RecordActions says of each replay command what aggregate.Decide says, in
// every status, with a reason for each refusal and the instant time alone
// lifts it (issue 30, item 3).
func TestRecordActionsAgreeWithTheAggregate(t *testing.T) {
	now := time.UnixMilli(5_000_000)
	ms := now.UnixMilli()
	state := func(st aggregate.Status, rec aggregate.Recoverability, retries, max int32, timeoutAt int64) aggregate.State {
		return aggregate.State{ID: "r", Status: st, Recoverable: rec, RetrySpec: aggregate.RetrySpec{MaxRetries: max, MinBackoff: 60, ExecutionTimeout: 30},
			RetryState: aggregate.RetryState{Retries: retries, TimeoutAt: timeoutAt, NextRetryAt: ms}}
	}
	cases := []struct {
		name    string
		s       aggregate.State
		prepare bool
		force   bool
		from    int64
	}{
		{"failed below the limit", state(aggregate.StatusFailed, aggregate.Recoverable, 1, 3, ms-1), true, true, 0},
		{"failed at the limit", state(aggregate.StatusFailed, aggregate.Recoverable, 3, 3, ms-1), false, true, 0},
		{"maxRetries 0", state(aggregate.StatusFailed, aggregate.Recoverable, 0, 0, ms-1), false, true, 0},
		{"prepared, running", state(aggregate.StatusPrepared, aggregate.Recoverable, 1, 3, ms+1000), false, false, ms + 1001},
		{"prepared, timed out", state(aggregate.StatusPrepared, aggregate.Recoverable, 1, 3, ms-1), true, true, 0},
		{"succeeded", state(aggregate.StatusSucceeded, aggregate.Recoverable, 1, 3, ms-1), false, false, 0},
		{"unrecoverable", state(aggregate.StatusFailed, aggregate.Unrecoverable, 0, 3, ms-1), true, true, 0},
	}
	for _, c := range cases {
		acts := dashboard.RecordActions(c.s, now)
		assert.Len(t, acts, len(api.OperatorCommands), c.name)
		for _, a := range acts {
			switch a.Name {
			case api.CommandPrepare, api.CommandForcePrepare:
				var cmd aggregate.Command = aggregate.PrepareCompensation{}
				want := c.prepare
				if a.Name == api.CommandForcePrepare {
					cmd, want = aggregate.ForcePrepareCompensation{}, c.force
				}
				_, err := aggregate.Decide(c.s, cmd, now)
				assert.Equal(t, err == nil, a.Accepted, "%s: %s as Decide says", c.name, a.Name)
				assert.Equal(t, want, a.Accepted, "%s: %s", c.name, a.Name)
				assert.NotEmpty(t, a.Why, "%s: %s says why", c.name, a.Name)
				if !a.Accepted {
					assert.Equal(t, c.from, a.From, "%s: %s from", c.name, a.Name)
					if a.From != 0 {
						_, err := aggregate.Decide(c.s, cmd, time.UnixMilli(a.From))
						assert.NoError(t, err, "%s: %s is accepted from the instant given", c.name, a.Name)
						_, err = aggregate.Decide(c.s, cmd, time.UnixMilli(a.From-1))
						assert.Error(t, err, "%s: %s is refused just before", c.name, a.Name)
					}
				}
			default:
				assert.True(t, a.Accepted, "%s: %s is accepted in every status", c.name, a.Name)
			}
		}
	}
}
