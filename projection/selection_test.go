package projection_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// row is one combination of the selection table: the record's status,
// classification, whether its retries are exhausted, and whether its
// backoff ends before or after its execution timeout.
type row struct {
	status      aggregate.Status
	recoverable aggregate.Recoverability
	exhausted   bool
	backoffLate bool // nextRetryAt after timeoutAt
}

func (r row) String() string {
	return fmt.Sprintf("%s/%s/exhausted=%v/backoffLate=%v", r.status, r.recoverable, r.exhausted, r.backoffLate)
}

func rows() []row {
	var out []row
	for _, s := range aggregate.Statuses {
		for _, rc := range aggregate.Recoverabilities {
			for _, ex := range []bool{false, true} {
				for _, late := range []bool{false, true} {
					out = append(out, row{s, rc, ex, late})
				}
			}
		}
	}
	return out
}

// build drives a record into the row's state through the command service:
// every record is prepared once at t0 (retries 1), so with maxRetries 1 it
// is exhausted and with 2 it is not. Prepared at t0 with a 1 s or 10 s
// backoff (doubled: nextRetryAt t0+2 s or t0+20 s) and a 10 s or 1 s
// timeout (timeoutAt t0+10 s or t0+1 s).
func (r row) build(t *testing.T, e *env, i int) string {
	spec := aggregate.RetrySpec{MaxRetries: 2, MinBackoff: 1, ExecutionTimeout: 10}
	if r.exhausted {
		spec.MaxRetries = 1
	}
	if r.backoffLate {
		spec.MinBackoff, spec.ExecutionTimeout = 10, 1
	}
	id := e.create(t, evt(i), fnA, "E", &spec)
	e.exec(t, id, aggregate.ForcePrepareCompensation{})
	switch r.status {
	case aggregate.StatusFailed:
		e.exec(t, id, aggregate.ApplyExecutionFailed{Error: aggregate.ErrorDetails{ErrorCode: "E"}, ExecuteAt: t0.UnixMilli(), Recoverable: r.recoverable})
	case aggregate.StatusSucceeded:
		e.exec(t, id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0.UnixMilli()})
	}
	if s, _, _ := e.svc.Get(t.Context(), id); s.Recoverable != r.recoverable {
		e.exec(t, id, aggregate.MarkRecoverable{Recoverable: r.recoverable})
	}
	return id
}

// The scheduler's selection (Due) and the six views of the index agree with
// the aggregate for every status × recoverability × retries × timeout
// combination, at every boundary instant: before anything, at and just
// after each timeout, at each nextRetryAt, and much later.
func TestSelectionAgreesWithTheAggregate(t *testing.T) {
	e := newEnv(t)
	run(t, e.projector(t))
	ix := e.index(t)
	run(t, ix)
	ids := map[row]string{}
	for i, r := range rows() {
		ids[r] = r.build(t, e, i)
	}
	for _, id := range ids {
		_, v, err := e.svc.Get(t.Context(), id)
		require.NoError(t, err)
		require.NoError(t, ix.WaitFor(t.Context(), id, v))
	}

	ms := func(d time.Duration) time.Time { return t0.Add(d) }
	nows := []time.Time{t0, ms(time.Second), ms(time.Second + time.Millisecond), ms(2 * time.Second),
		ms(10 * time.Second), ms(10*time.Second + time.Millisecond), ms(20 * time.Second), ms(time.Hour)}
	selected := 0
	for _, now := range nows {
		due := map[string]bool{}
		for _, d := range ix.Due(now, 1000) {
			due[d.ID] = true
		}
		selected += len(due)
		views := map[aggregate.View][]string{}
		for _, v := range aggregate.Views {
			p, err := ix.List(api.Query{Filter: api.Filter{View: v, Now: now}, Limit: api.MaxLimit})
			require.NoError(t, err)
			for _, it := range p.Items {
				views[v] = append(views[v], it.ID)
			}
		}
		for r, id := range ids {
			s, _, err := e.svc.Get(t.Context(), id)
			require.NoError(t, err)
			name := fmt.Sprintf("%s at t0+%s", r, now.Sub(t0))
			want := r.recoverable != aggregate.Unrecoverable && s.CanNextRetry(now)
			assert.Equal(t, want, s.Schedulable(now), "%s: Schedulable is recoverable-or-unknown and CanNextRetry", name)
			assert.Equal(t, want, due[id], "%s: Due", name)
			for _, v := range aggregate.Views {
				assert.Equal(t, v.Contains(&s, now), slices.Contains(views[v], id), "%s: view %s", name, v)
			}
		}
	}
	assert.Positive(t, selected, "the table selects some rows at some instants")
	assert.Less(t, selected, len(ids)*len(nows), "and not every row at every instant")
}
