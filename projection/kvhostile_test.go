package projection_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/quarantine"
)

// viewsQuarantined returns the quarantine's entries of the views bucket by
// key.
func viewsQuarantined(t *testing.T, q *quarantine.Quarantine) map[string]quarantine.Entry {
	t.Helper()
	all, err := q.All(t.Context(), quarantine.Query{Consumer: projection.DefaultBucket})
	require.NoError(t, err)
	out := map[string]quarantine.Entry{}
	for _, e := range all {
		if _, id, err := projection.ParseKey(e.Key); err == nil {
			out[id] = e // by record, whatever its processor
		} else {
			out[e.Key] = e
		}
	}
	return out
}

func putView(t *testing.T, e *env, id string, raw []byte) {
	t.Helper()
	_, err := e.views.Put(t.Context(), keyOf(t, e.views, id), raw)
	require.NoError(t, err)
}

// Finding 9: a view that is not JSON made its record vanish from list and
// summary and show answer 500, counted nowhere; a view with an empty
// function broke listing; a view at version 2^64-1 was never updated
// again. Each is quarantined, the record is still shown (from its
// history), and its view is projected again.
func TestInvalidViewsAreQuarantinedShownAndProjectedAgain(t *testing.T) {
	e := newEnv(t)
	q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	p := e.projector(t, projection.WithQuarantine(q))
	run(t, p)
	ix := e.index(t, projection.WithReprojector(p), projection.WithIndexQuarantine(q), projection.WithBucketCheck(50*time.Millisecond))
	run(t, ix)
	<-ix.Ready()
	ids := []string{e.create(t, evt(1), fnA, "E", nil), e.create(t, evt(2), fnA, "E", nil), e.create(t, evt(3), fnA, "E", nil)}
	e.waitViews(t, map[string]uint64{ids[0]: 1, ids[1]: 1, ids[2]: 1})
	good, err := projection.GetView(t.Context(), e.views, ids[1])
	require.NoError(t, err)

	putView(t, e, ids[0], []byte("not a view"))
	noFunction := good
	noFunction.State.Function.Name = ""
	b, err := json.Marshal(noFunction)
	require.NoError(t, err)
	putView(t, e, ids[1], b)
	ahead := good
	ahead.State.ID, ahead.Version = ids[2], math.MaxUint64
	b, err = json.Marshal(ahead)
	require.NoError(t, err)
	putView(t, e, ids[2], b)

	v, err := ix.Get(t.Context(), ids[0])
	require.NoError(t, err, "show answers from the history, not 500")
	assert.Equal(t, ids[0], v.State.ID)
	e.waitViews(t, map[string]uint64{ids[0]: 1, ids[1]: 1, ids[2]: 1})
	require.Eventually(t, func() bool { return len(viewsQuarantined(t, q)) == 3 }, 30*time.Second, 5*time.Millisecond, "every bad view is quarantined")
	got := viewsQuarantined(t, q)
	assert.Contains(t, got[ids[1]].Error, "state.function.name: must not be empty")
	assert.Contains(t, got[ids[2]].Error, "version: 18446744073709551615 is above the view's sequence")
	page, err := ix.List(api.Query{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, page.Items, 3, "every record is listed")
	require.Eventually(t, func() bool { return ix.Corrupt() == 0 }, 30*time.Second, 5*time.Millisecond, "no corrupt view left")
}

// Finding 9: a view written ahead of its record (a consistent-looking
// version and sequence no stream has) kept the record from being updated
// for ever. The record's next stream finds it ahead of the record's last
// version and projects the view again from the history.
func TestAViewAheadOfItsRecordIsProjectedAgain(t *testing.T) {
	e := newEnv(t)
	q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	p := e.projector(t, projection.WithQuarantine(q))
	run(t, p)
	id := e.create(t, evt(1), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{id: 1})
	v, err := projection.GetView(t.Context(), e.views, id)
	require.NoError(t, err)
	v.Version, v.Seq = 1_000_000, 1_000_000
	b, err := json.Marshal(v)
	require.NoError(t, err)
	putView(t, e, id, b)
	e.exec(t, id, aggregate.MarkRecoverable{Recoverable: aggregate.Recoverable})
	e.waitViews(t, map[string]uint64{id: 2})
	got := viewsQuarantined(t, q)[id]
	assert.Contains(t, got.Error, "1000000 is ahead of the record's last version 2")
}

// Finding 7: the views bucket deleted and created again lost every
// record for good: the projector's consumer resumed where it was. The
// projector sees the bucket is younger than its consumer's progress and
// projects every record again, while it runs and after a restart.
func TestTheViewsBucketCreatedAgainIsProjectedAgain(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "while running"
		if restart {
			name = "after a restart"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			p := e.projector(t, projection.WithViewsCheck(50*time.Millisecond))
			stop := run(t, p)
			ix := e.index(t, projection.WithBucketCheck(50*time.Millisecond))
			run(t, ix)
			want := map[string]uint64{}
			for i := range 6 {
				want[e.create(t, evt(i), fnA, "E", nil)] = 1
			}
			e.waitViews(t, want)
			e.drained(t)
			if restart {
				stop()
			}
			require.NoError(t, e.js.DeleteKeyValue(t.Context(), projection.DefaultBucket))
			e.views = natstest.Recreate(t, func() (*projection.Views, error) { return projection.OpenViews(t.Context(), e.js) })
			if restart {
				p = e.projector(t, projection.WithViewsCheck(50*time.Millisecond))
				run(t, p)
			}
			e.waitViews(t, want)
			require.Eventually(t, func() bool { return ix.Len() == len(want) }, 30*time.Second, 5*time.Millisecond, "the index has every record again")
			assert.Equal(t, uint64(1), p.Stats().Reprojected)
		})
	}
}

// Finding 1 of issue 38: a record whose history makes a view the readers
// refuse (times before 1970, as a forged or buggy CreateExecutionFailed
// gives) was written, refused by the index, projected again and written
// again, forever (130 806 revisions in 60 s). It is now never written: the
// projector quarantines the message once, the index has nothing to refuse
// and asks for nothing, and the other records are projected.
func TestAHistoryThatMakesNoValidViewIsNeverWritten(t *testing.T) {
	e := newEnv(t)
	q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	p := e.projector(t, projection.WithQuarantine(q))
	run(t, p)
	ix := e.index(t, projection.WithReprojector(p), projection.WithIndexQuarantine(q), projection.WithBucketCheck(20*time.Millisecond))
	run(t, ix)
	<-ix.Ready()
	bad := aggregate.RecordID(evt(1), fnA)
	// What a buggy service appends around the command's validation.
	_, body, err := aggregate.EncodeEvent(aggregate.ExecutionFailedCreated{
		EventID:   aggregate.EventID{ID: evt(1), AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function:  fnA,
		Error:     aggregate.ErrorDetails{ErrorCode: "E", ErrorMsg: "boom"},
		ExecuteAt: math.MinInt64, RetryState: aggregate.RetryState{Retries: 0, NextRetryAt: math.MinInt64},
		RetrySpec: aggregate.DefaultRetrySpec, Recoverable: aggregate.RecoverabilityUnknown,
	})
	require.NoError(t, err)
	_, err = e.store.Append(t.Context(), eventstore.Stream{ID: "forged-1", Aggregate: aggregate.RecordAggregate(bad), Version: 1, CreateTime: t0.UnixMilli(),
		Events: []eventstore.Event{{ID: "forged-e-1", Name: aggregate.NameExecutionFailedCreated, Body: body}}}, 0)
	require.NoError(t, err, "the event store keeps what it is given")
	good := e.create(t, evt(2), fnA, "E", nil)
	e.waitViews(t, map[string]uint64{good: 1})

	require.Eventually(t, func() bool {
		all, err := q.All(t.Context(), quarantine.Query{})
		return err == nil && len(all) == 1
	}, 30*time.Second, 5*time.Millisecond, "the message is quarantined once")
	all, err := q.All(t.Context(), quarantine.Query{})
	require.NoError(t, err)
	assert.Equal(t, quarantine.ReasonInvalidView, all[0].Reason)
	assert.Contains(t, all[0].Error, "would not validate")
	_, err = e.views.Lookup(t.Context(), bad)
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "the view the readers would refuse is never written")
	assert.Zero(t, ix.Corrupt())
}

// status returns the status the index lists record id with ("" if it
// lists none).
func listedStatus(t *testing.T, ix *projection.Index, id string) aggregate.Status {
	t.Helper()
	p, err := ix.List(api.Query{Limit: api.MaxLimit})
	require.NoError(t, err)
	for _, it := range p.Items {
		if it.ID == id {
			return it.Status
		}
	}
	return ""
}

// editStatus writes record id's view back with status s, as a stranger
// with write access to the views bucket would.
func editStatus(t *testing.T, e *env, id string, s aggregate.Status) {
	t.Helper()
	v, err := projection.GetView(t.Context(), e.views, id)
	require.NoError(t, err)
	v.State.Status = s
	b, err := json.Marshal(v)
	require.NoError(t, err)
	putView(t, e, id, b)
}

// Finding 7 of "derived state never outranks the event store": a view
// edited from FAILED to SUCCEEDED was believed (never retried, even
// after a full reload) while its history holds only the failure. The
// index audits such a change at once, and every record in turn: the view
// is projected back from its history, the edit reported with the field.
func TestAViewEditedToSucceededIsProjectedBackFromItsHistory(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "while the index watches", true: "while no index runs"}[restart], func(t *testing.T) {
			e := newEnv(t)
			q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
			require.NoError(t, err)
			p := e.projector(t, projection.WithQuarantine(q))
			run(t, p)
			// The round's rate is low enough that only a suspicious change
			// or the round finds the edit, and high enough for a test.
			opts := []projection.IndexOption{projection.WithReprojector(p), projection.WithIndexQuarantine(q), projection.WithAudit(50)}
			ix := e.index(t, opts...)
			stop := run(t, ix)
			<-ix.Ready()
			id := e.create(t, evt(1), fnA, "E", nil)
			e.waitViews(t, map[string]uint64{id: 1})
			require.Eventually(t, func() bool { return listedStatus(t, ix, id) == aggregate.StatusFailed }, 30*time.Second, 5*time.Millisecond)
			if restart {
				stop()
				editStatus(t, e, id, aggregate.StatusSucceeded)
				ix = e.index(t, opts...)
				run(t, ix)
				<-ix.Ready()
			} else {
				editStatus(t, e, id, aggregate.StatusSucceeded)
			}
			require.Eventually(t, func() bool {
				v, err := projection.GetView(t.Context(), e.views, id)
				return err == nil && v.State.Status == aggregate.StatusFailed && listedStatus(t, ix, id) == aggregate.StatusFailed
			}, 30*time.Second, 5*time.Millisecond, "the view is its history's again, and listed so")
			got := viewsQuarantined(t, q)[id]
			assert.Contains(t, got.Error, "status: the stored view's status is SUCCEEDED, its history's FAILED")
			assert.Positive(t, ix.Audited())
		})
	}
}
