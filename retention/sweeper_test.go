package retention_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/retention"
	"github.com/amends-dev/amends/scheduler"
)

const day = 24 * time.Hour

// retentionEnv is a control plane whose compensation stream allows
// removal, with the sweeper's bucket and an audit log.
type retentionEnv struct {
	*env
	views     *projection.Views
	progress  *retention.Store
	audit     *audit.Log
	projector *projection.Projector
}

func newRetentionEnv(tb testing.TB, js jetstream.JetStream, opts ...jsstore.Option) *retentionEnv {
	tb.Helper()
	if js == nil {
		js = natstest.New(tb).JetStream()
	}
	e := &env{js: js, clock: fakeclock.At(t0.UnixMilli())}
	var err error
	e.store, err = jsstore.New(js, append([]jsstore.Option{jsstore.WithRemovable(aggregate.Context)}, opts...)...)
	require.NoError(tb, err)
	views, err := projection.OpenViews(tb.Context(), js)
	require.NoError(tb, err)
	p, err := projection.NewProjector(js, e.store, views)
	require.NoError(tb, err)
	run(tb, p)
	e.index, err = projection.NewIndex(views, e.store, projection.WithClock(e.clock), projection.WithReprojector(p))
	require.NoError(tb, err)
	run(tb, e.index)
	e.svc = aggregate.NewService(e.store, aggregate.WithClock(e.clock))
	e.leases, err = scheduler.OpenLeases(tb.Context(), js, scheduler.WithLeaseTTL(time.Second))
	require.NoError(tb, err)
	progress, err := retention.Open(tb.Context(), js, "", 1)
	require.NoError(tb, err)
	log, err := audit.Open(tb.Context(), js, audit.Config{})
	require.NoError(tb, err)
	return &retentionEnv{env: e, views: views, progress: progress, audit: log, projector: p}
}

func (e *retentionEnv) sweeper(tb testing.TB, cfg retention.Config) *retention.Sweeper {
	tb.Helper()
	cfg.Records, cfg.Store, cfg.Views, cfg.Progress, cfg.Clock, cfg.Audit = e.index, e.store, e.views, e.progress, e.clock, e.audit
	if cfg.Succeeded == 0 {
		cfg.Succeeded = 30 * day
	}
	sw, err := retention.New(cfg)
	require.NoError(tb, err)
	return sw
}

// succeed creates record i and takes it to SUCCEEDED at the clock's time.
func (e *retentionEnv) succeed(tb testing.TB, i int) (string, uint64) {
	tb.Helper()
	id, _ := e.create(tb, i, aggregate.RecoverabilityUnknown)
	_, err := e.svc.Execute(tb.Context(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{})
	require.NoError(tb, err)
	r, err := e.svc.Execute(tb.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: e.clock.Now().UnixMilli()}, aggregate.Meta{})
	require.NoError(tb, err)
	return id, r.Version
}

// gone reports whether record id has no history left.
func (e *retentionEnv) gone(tb testing.TB, id string) bool {
	tb.Helper()
	_, err := e.store.LoadLast(tb.Context(), aggregate.RecordAggregate(id))
	if errors.Is(err, eventstore.ErrNotFound) {
		return true
	}
	require.NoError(tb, err)
	return false
}

// population: 6 records that succeeded at t0, 2 that succeeded at
// t0+20 days, 2 failed (recoverable) and 2 unrecoverable at t0.
type population struct {
	old, recent, failed, unrecoverable []string
	versions                           map[string]uint64
	histories                          map[string][]eventstore.Stream
}

func (e *retentionEnv) populate(tb testing.TB) population {
	tb.Helper()
	p := population{versions: map[string]uint64{}, histories: map[string][]eventstore.Stream{}}
	for i := range 6 {
		id, v := e.succeed(tb, i)
		p.old, p.versions[id] = append(p.old, id), v
	}
	for i := 6; i < 8; i++ {
		id, v := e.create(tb, i, aggregate.Recoverable)
		p.failed, p.versions[id] = append(p.failed, id), v
	}
	for i := 8; i < 10; i++ {
		id, v := e.create(tb, i, aggregate.Unrecoverable)
		p.unrecoverable, p.versions[id] = append(p.unrecoverable, id), v
	}
	e.clock.Set(t0.Add(20 * day))
	for i := 10; i < 12; i++ {
		id, v := e.succeed(tb, i)
		p.recent, p.versions[id] = append(p.recent, id), v
	}
	for id := range p.versions {
		h, err := e.store.Load(tb.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(tb, err)
		p.histories[id] = h
	}
	e.indexed(tb, p.versions)
	e.clock.Set(t0.Add(31 * day))
	return p
}

func (e *retentionEnv) tallied(tb testing.TB) (succeeded, unrecoverable int64) {
	tb.Helper()
	ts, bad, err := e.progress.Tallies(tb.Context())
	require.NoError(tb, err)
	require.Empty(tb, bad)
	for _, t := range ts {
		succeeded += t.Succeeded
		unrecoverable += t.Unrecoverable
	}
	return succeeded, unrecoverable
}

func TestSweeperRemovesSucceededRecordsPastTheirRetention(t *testing.T) {
	// Given records that succeeded 31 and 11 days ago, and failed ones
	e := newRetentionEnv(t, nil)
	p := e.populate(t)
	sw := e.sweeper(t, retention.Config{Succeeded: 30 * day})

	// When the sweeper runs
	rep, err := sw.Sweep(t.Context())
	require.NoError(t, err)

	// Then the six old successes are gone from the stream, the views and the index
	assert.Equal(t, uint64(1), rep.Batch)
	assert.Equal(t, 6, rep.Succeeded)
	assert.Zero(t, rep.Unrecoverable)
	assert.Equal(t, 6, rep.Views, "each removed record's view is deleted")
	msgs := 0
	for _, id := range p.old {
		assert.True(t, e.gone(t, id), "record %s's history is purged", id)
		msgs += len(p.histories[id])
	}
	assert.Equal(t, msgs, rep.Messages, "every message of the removed histories is purged")
	testwait.For(t, "the index drops the removed records", func() bool { return e.index.Len() == 6 })
	for _, id := range append(append(append([]string{}, p.recent...), p.failed...), p.unrecoverable...) {
		assert.False(t, e.gone(t, id), "record %s is kept", id)
		_, err := e.index.Get(t.Context(), id)
		assert.NoError(t, err, "record %s is still queryable", id)
	}

	// And they survive as a tally, the progress and an audit entry
	s, u := e.tallied(t)
	assert.Equal(t, int64(6), s, "the tally counts the six removed successes")
	assert.Zero(t, u)
	st, _, err := e.progress.State(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Batch)
	assert.Nil(t, st.Pending)
	assert.Equal(t, int64(6), st.Removed)
	page, err := e.audit.Query(t.Context(), audit.Query{Kind: api.AuditRetention})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1, "one audit entry per batch")
	assert.Contains(t, page.Entries[0].Reason, "removed 6 records (6 succeeded, 0 unrecoverable)")
	assert.Equal(t, "scheduler", page.Entries[0].Actor)

	// And a second pass finds nothing to do
	rep, err = sw.Sweep(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rep.Batch, "nothing else is past its retention")

	// And the recent ones go once they are old enough
	e.clock.Set(t0.Add(51 * day))
	rep, err = sw.Sweep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Succeeded)
	s, _ = e.tallied(t)
	assert.Equal(t, int64(8), s)
}

func TestSweeperRemovesUnrecoverableRecordsOnlyWithTheirOwnRetention(t *testing.T) {
	e := newRetentionEnv(t, nil)
	p := e.populate(t)

	// Given retention of succeeded records only: the unrecoverable ones stay
	sw := e.sweeper(t, retention.Config{Succeeded: 30 * day})
	_, err := sw.SweepAll(t.Context())
	require.NoError(t, err)
	for _, id := range p.unrecoverable {
		assert.False(t, e.gone(t, id), "an unrecoverable record is kept without --retention-unrecoverable")
	}

	// When they have a retention of their own
	sw = e.sweeper(t, retention.Config{Succeeded: 30 * day, Unrecoverable: 7 * day})
	reps, err := sw.SweepAll(t.Context())
	require.NoError(t, err)

	// Then they go, and the recoverable failures stay
	require.Len(t, reps, 1)
	assert.Equal(t, 2, reps[0].Unrecoverable)
	for _, id := range p.unrecoverable {
		assert.True(t, e.gone(t, id))
	}
	for _, id := range p.failed {
		assert.False(t, e.gone(t, id), "a FAILED record that will be retried is never removed")
	}
	s, u := e.tallied(t)
	assert.Equal(t, int64(6), s)
	assert.Equal(t, int64(2), u)
}

func TestSweeperIsPacedByItsBatch(t *testing.T) {
	e := newRetentionEnv(t, nil)
	p := e.populate(t)
	sw := e.sweeper(t, retention.Config{Batch: 4})

	rep, err := sw.Sweep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Removed(), "one pass removes at most its batch")
	left := 0
	for _, id := range p.old {
		if !e.gone(t, id) {
			left++
		}
	}
	assert.Equal(t, 2, left, "the oldest four went first, two wait for the next pass")
	rep, err = sw.Sweep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Removed())
	assert.Equal(t, uint64(2), rep.Batch)
}

func TestSweeperArchivesEachHistoryBeforeRemovingIt(t *testing.T) {
	// Given an archive directory. The stream's duplicate window is short:
	// a restore appends the streams again with their ids, which JetStream
	// remembers for that long after they were first appended (in real
	// use, the retention is far longer than the window).
	e := newRetentionEnv(t, nil, jsstore.WithDuplicateWindow(time.Second))
	p := e.populate(t)
	sink, err := archive.OpenDir(t.TempDir())
	require.NoError(t, err)
	sw := e.sweeper(t, retention.Config{Archive: sink})

	// When the sweeper runs
	rep, err := sw.Sweep(t.Context())
	require.NoError(t, err)

	// Then the manifest lists the six records and the object holds their whole histories
	require.Equal(t, archive.ManifestName(1), rep.Manifest)
	m, err := archive.ReadManifest(t.Context(), sink, 1)
	require.NoError(t, err)
	require.Len(t, m.Objects, 1, "one object per function")
	assert.ElementsMatch(t, p.old, m.Objects[0].Records)
	got := map[string][]eventstore.Stream{}
	require.NoError(t, archive.ReadObject(t.Context(), sink, m.Objects[0], func(r archive.Record) error {
		got[r.ID] = r.Streams
		assert.Equal(t, fn, r.Function)
		return nil
	}))
	for _, id := range p.old {
		assert.Equal(t, p.histories[id], got[id], "record %s's archived history is the one removed", id)
	}
	st, _, err := e.progress.State(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(6), st.Archived)

	// And a restored record is queryable again, as it was
	testwait.For(t, "the index drops the removed records", func() bool { return e.index.Len() == 6 })
	var r archive.Record
	require.NoError(t, archive.ReadObject(t.Context(), sink, m.Objects[0], func(rec archive.Record) error {
		if rec.ID == p.old[0] {
			r = rec
		}
		return nil
	}))
	res, err := archive.Restore(t.Context(), e.store, r, true)
	require.NoError(t, err)
	assert.Equal(t, archive.RestoreResult{ID: p.old[0], Outcome: archive.Restored, Appended: len(r.Streams)}, res, "a dry run says what it would do")
	assert.True(t, e.gone(t, p.old[0]), "a dry run appends nothing")
	testwait.For(t, "the restore is past the duplicate window", func() bool {
		res, err = archive.Restore(t.Context(), e.store, r, false)
		return err == nil
	})
	assert.Contains(t, []string{archive.Restored, archive.Completed}, res.Outcome)
	e.indexed(t, map[string]uint64{p.old[0]: p.versions[p.old[0]]})
	v, err := e.index.Get(t.Context(), p.old[0])
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusSucceeded, v.State.Status)
	res, err = archive.Restore(t.Context(), e.store, r, false)
	require.NoError(t, err)
	assert.Equal(t, archive.Present, res.Outcome, "restoring twice appends nothing")
}

// crash is the error a sweep hook returns to stop the pass at a step.
var errCrash = errors.New("crash")

func TestSweeperFinishesABatchInterruptedAtAnyStep(t *testing.T) {
	for _, at := range []struct {
		step string
		n    int // the n-th time the step is reached
	}{{"archived", 1}, {"pending", 1}, {"tallied", 1}, {"purged", 1}, {"purged", 6}} {
		for _, archived := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s#%d/archive=%v", at.step, at.n, archived), func(t *testing.T) {
				// Given a sweep that stops at a step, as a crash would
				e := newRetentionEnv(t, nil)
				p := e.populate(t)
				var sink archive.Sink
				if archived {
					d, err := archive.OpenDir(t.TempDir())
					require.NoError(t, err)
					sink = d
				}
				sw := e.sweeper(t, retention.Config{Archive: sink})
				seen := 0
				retention.SetHook(sw, func(step string) error {
					if step == at.step {
						if seen++; seen == at.n {
							return errCrash
						}
					}
					return nil
				})
				_, err := sw.Sweep(t.Context())
				require.ErrorIs(t, err, errCrash)
				if archived {
					m, err := archive.ReadManifest(t.Context(), sink, 1)
					require.NoError(t, err, "the archive is written before anything is removed")
					for _, id := range p.old {
						if e.gone(t, id) {
							assert.Contains(t, m.Objects[0].Records, id, "record %s was removed only once archived", id)
						}
					}
				}

				// When a new sweeper (a restart) runs
				again := e.sweeper(t, retention.Config{Archive: sink})
				reps, err := again.SweepAll(t.Context())
				require.NoError(t, err)

				// Then the batch is finished once: every old record removed, counted once
				for _, id := range p.old {
					assert.True(t, e.gone(t, id), "record %s is removed", id)
				}
				require.NotEmpty(t, reps)
				assert.Equal(t, uint64(1), reps[0].Batch, "the interrupted batch is the one finished")
				s, _ := e.tallied(t)
				assert.Equal(t, int64(6), s, "each removed record is counted once, whatever step the crash hit")
				st, _, err := e.progress.State(t.Context())
				require.NoError(t, err)
				assert.Equal(t, uint64(1), st.Batch)
				testwait.For(t, "the index drops the removed records", func() bool { return e.index.Len() == 6 })
				if archived {
					m, err := archive.ReadManifest(t.Context(), sink, 1)
					require.NoError(t, err)
					assert.ElementsMatch(t, p.old, m.Objects[0].Records)
				}
			})
		}
	}
}

func TestABatchPendingWhenTheArchiveIsTurnedOnIsArchivedBeforeItsRemoval(t *testing.T) {
	// Given a batch recorded and tallied without an archive, its sweeper stopped
	e := newRetentionEnv(t, nil)
	p := e.populate(t)
	sw := e.sweeper(t, retention.Config{})
	retention.SetHook(sw, func(step string) error {
		if step == "tallied" {
			return errCrash
		}
		return nil
	})
	_, err := sw.Sweep(t.Context())
	require.ErrorIs(t, err, errCrash)

	// When a sweeper with an archive finishes it
	sink, err := archive.OpenDir(t.TempDir())
	require.NoError(t, err)
	rep, err := e.sweeper(t, retention.Config{Archive: sink}).Sweep(t.Context())
	require.NoError(t, err)

	// Then its records were archived before they were removed
	assert.Equal(t, uint64(1), rep.Batch)
	m, err := archive.ReadManifest(t.Context(), sink, 1)
	require.NoError(t, err)
	assert.ElementsMatch(t, p.old, m.Objects[0].Records)
	for _, id := range p.old {
		assert.True(t, e.gone(t, id))
	}
}

func TestSweeperHaltsOnAnInvalidStoredState(t *testing.T) {
	// Given a sweep state that does not validate
	e := newRetentionEnv(t, nil)
	p := e.populate(t)
	kv, err := e.js.KeyValue(t.Context(), retention.DefaultBucket)
	require.NoError(t, err)
	for _, bad := range []string{`{"batch":1,"pending":{"n":7,"startedAt":1,"records":[]}}`, `not json`, `{"removed":-1}`} {
		_, err = kv.Put(t.Context(), "sweep", []byte(bad))
		require.NoError(t, err)

		// When the sweeper runs
		sw := e.sweeper(t, retention.Config{})
		_, err = sw.Sweep(t.Context())

		// Then it halts and removes nothing
		require.ErrorIs(t, err, retention.ErrInvalid, "state %s", bad)
		assert.Equal(t, uint64(1), sw.Stats().Halted)
		for _, id := range p.old {
			assert.False(t, e.gone(t, id), "nothing is removed on an invalid state")
		}
	}
}

func TestSweeperReplacesAnInvalidTally(t *testing.T) {
	e := newRetentionEnv(t, nil)
	e.populate(t)
	kv, err := e.js.KeyValue(t.Context(), retention.DefaultBucket)
	require.NoError(t, err)
	key := retention.TallyKey(fn, "Timeout", "")
	_, err = kv.Put(t.Context(), key, []byte(`{"succeeded":-5}`))
	require.NoError(t, err)
	_, bad, err := e.progress.Tallies(t.Context())
	require.NoError(t, err)
	require.Len(t, bad, 1, "an invalid tally is reported, not counted")
	sw := e.sweeper(t, retention.Config{})
	_, err = sw.Sweep(t.Context())
	require.NoError(t, err, "an invalid tally does not halt removals")
	s, _ := e.tallied(t)
	assert.Equal(t, int64(6), s, "the tally starts again from the batch")
}

func TestARecordReopenedAfterItsRemovalWorks(t *testing.T) {
	for _, removed := range []bool{false, true} {
		t.Run(fmt.Sprintf("removed=%v", removed), func(t *testing.T) {
			// Given a record that succeeded long ago, its history removed or not
			e := newRetentionEnv(t, nil)
			p := e.populate(t)
			id := p.old[0]
			if removed {
				_, err := e.sweeper(t, retention.Config{}).Sweep(t.Context())
				require.NoError(t, err)
				require.True(t, e.gone(t, id))
				testwait.For(t, "the index drops the record", func() bool { return e.index.Version(id) == 0 })
			}

			// When the same event fails again in the same function
			id2, v := e.create(t, 0, aggregate.Recoverable)

			// Then it is the same record, FAILED again, and queryable
			require.Equal(t, id, id2, "the record id is derived from the event and the function")
			want := p.versions[id] + 1
			if removed {
				want = 1
			}
			assert.Equal(t, want, v, "re-opened on its history, or started again without it")
			testwait.For(t, "the index has the re-opened record", func() bool {
				page, err := e.index.List(api.Query{Filter: api.Filter{ID: id}})
				require.NoError(t, err)
				return len(page.Items) == 1 && page.Items[0].Version == v && page.Items[0].Status == aggregate.StatusFailed
			})
			got, err := e.index.Get(t.Context(), id)
			require.NoError(t, err)
			assert.Equal(t, aggregate.StatusFailed, got.State.Status)
			assert.Equal(t, v, got.Version)

			// And it can be retried
			e.clock.Set(e.clock.Now().Add(time.Minute))
			r, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{})
			require.NoError(t, err)
			e.indexed(t, map[string]uint64{id: r.Version})
		})
	}
}

func TestARecordReopenedBetweenPurgeAndViewDeleteKeepsItsNewView(t *testing.T) {
	// Given a sweep that stopped after purging a record, its view not yet deleted
	e := newRetentionEnv(t, nil)
	e.populate(t)
	sw := e.sweeper(t, retention.Config{Batch: 1})
	retention.SetHook(sw, func(step string) error {
		if step == "purged" {
			return errCrash
		}
		return nil
	})
	_, err := sw.Sweep(t.Context())
	require.ErrorIs(t, err, errCrash)
	st, _, err := e.progress.State(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Pending.Records, 1)
	id := st.Pending.Records[0].ID
	require.True(t, e.gone(t, id))
	var i int
	for i = 0; aggregate.RecordID(fmt.Sprintf("evt-%05d", i), fn) != id; i++ {
	}

	// When the record fails again, and the sweep is finished
	_, v := e.create(t, i, aggregate.Recoverable)
	require.Equal(t, uint64(1), v)
	testwait.For(t, "the views bucket has the new failure", func() bool {
		got, err := e.index.Get(t.Context(), id)
		return err == nil && got.Version == 1
	})
	testwait.For(t, "the index has the new failure, not the removed success", func() bool {
		page, err := e.index.List(api.Query{Filter: api.Filter{ID: id}})
		require.NoError(t, err)
		return len(page.Items) == 1 && page.Items[0].Status == aggregate.StatusFailed && page.Items[0].Version == 1
	})
	rep, err := e.sweeper(t, retention.Config{Batch: 1}).Sweep(t.Context())
	require.NoError(t, err)

	// Then the new failure keeps its history and its view
	assert.Equal(t, uint64(1), rep.Batch)
	assert.False(t, e.gone(t, id), "what was appended after the removed sequence stays")
	got, err := e.index.Get(t.Context(), id)
	require.NoError(t, err, "the view of the new failure is not deleted")
	assert.Equal(t, aggregate.StatusFailed, got.State.Status)
	assert.Equal(t, uint64(1), got.Version)
}

func TestSchedulerSweepsOnlyWhileItHoldsTheLease(t *testing.T) {
	e := newRetentionEnv(t, nil)
	p := e.populate(t)
	holderTicks, otherTicks := make(chan time.Time), make(chan time.Time)
	holderSw := e.sweeper(t, retention.Config{Ticks: holderTicks})
	otherSw := e.sweeper(t, retention.Config{Ticks: otherTicks})
	never := make(chan time.Time)
	holder := e.scheduler(t, e.svc, scheduler.WithTicks(never), scheduler.WithRetention(holderSw), scheduler.WithInstance("holder"),
		scheduler.WithRenewal(200*time.Millisecond, 100*time.Millisecond))
	run(t, holder)
	testwait.For(t, "the first scheduler holds the lease", func() bool { return holder.Stats().Active })
	other := e.scheduler(t, e.svc, scheduler.WithTicks(never), scheduler.WithRetention(otherSw), scheduler.WithInstance("other"),
		scheduler.WithRenewal(200*time.Millisecond, 100*time.Millisecond))
	run(t, other)

	// When both are ticked (the second send returns once the first tick is handled)
	for range 2 {
		otherTicks <- time.Now()
	}
	assert.Zero(t, otherSw.Stats().Passes, "an instance without the lease does not sweep")
	for range 2 {
		holderTicks <- time.Now()
	}

	// Then only the holder swept
	testwait.For(t, "the holder removed the old records", func() bool { return e.gone(t, p.old[len(p.old)-1]) })
	assert.NotZero(t, holderSw.Stats().Batches)
	assert.Zero(t, otherSw.Stats().Passes)
	assert.Same(t, holderSw, holder.Retention())
}

func TestNewSweeperValidatesItsSettings(t *testing.T) {
	e := newRetentionEnv(t, nil)
	for _, c := range []struct {
		name string
		cfg  retention.Config
		want string
	}{
		{"too short", retention.Config{Succeeded: time.Minute}, "retention of succeeded records must be 0 (keep) or from 1h0m0s"},
		{"too long", retention.Config{Succeeded: 11 * 365 * day}, "retention of succeeded records"},
		{"negative unrecoverable", retention.Config{Unrecoverable: -time.Hour}, "retention of unrecoverable records"},
		{"batch", retention.Config{Batch: retention.MaxBatch + 1}, "batch must be from 1 to 10000"},
		{"every", retention.Config{Every: time.Millisecond}, "time between sweeps must be from 1s to 24h"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Records, cfg.Store, cfg.Views, cfg.Progress = e.index, e.store, e.views, e.progress
			if cfg.Succeeded == 0 && c.name != "negative unrecoverable" {
				cfg.Succeeded = 30 * day
			}
			_, err := retention.New(cfg)
			require.ErrorIs(t, err, retention.ErrInvalidOption)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := retention.New(retention.Config{Succeeded: day})
	require.ErrorIs(t, err, retention.ErrInvalidOption, "a sweeper needs its record source, store, views and progress")
}

func TestSweeperRefusesAStreamThatDeniesPurges(t *testing.T) {
	// Given a compensation stream created before retention existed
	js := natstest.New(t).JetStream()
	old, err := jsstore.New(js)
	require.NoError(t, err)
	require.NoError(t, old.Provision(t.Context(), aggregate.Context))
	e := newRetentionEnv(t, js)
	p := e.populate(t)

	// When the sweeper runs
	_, err = e.sweeper(t, retention.Config{}).Sweep(t.Context())

	// Then it says so and removes (and counts) nothing
	require.ErrorIs(t, err, jsstore.ErrRemovalDenied)
	assert.Contains(t, err.Error(), "docs/retention.md")
	for _, id := range p.old {
		assert.False(t, e.gone(t, id))
	}
	s, _ := e.tallied(t)
	assert.Zero(t, s, "nothing is tallied that was not removed")
}

// A pending batch in the bucket is derived state: one that lists live
// records (a FAILED one, one that succeeded too recently, one listed as
// SUCCEEDED that is not), written by a stranger or left by a bug, removes
// none of them, whether or not it says it was tallied; the event store
// decides.
func TestAForgedPendingBatchRemovesNoLiveRecord(t *testing.T) {
	for _, tallied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tallied=%v", tallied), func(t *testing.T) {
			e := newRetentionEnv(t, nil)
			p := e.populate(t)
			live := append(append(append([]string(nil), p.failed...), p.recent...), p.unrecoverable...)
			var recs []retention.Removal
			for _, id := range live {
				last, err := e.store.LoadLast(t.Context(), aggregate.RecordAggregate(id))
				require.NoError(t, err)
				recs = append(recs, retention.Removal{ID: id, Through: last.Seq, Version: last.Version, Function: fn,
					Status: aggregate.StatusSucceeded, ExecuteAt: t0.UnixMilli()})
			}
			old := p.old[0]
			last, err := e.store.LoadLast(t.Context(), aggregate.RecordAggregate(old))
			require.NoError(t, err)
			recs = append(recs, retention.Removal{ID: old, Through: last.Seq, Version: last.Version, Function: fn, Status: aggregate.StatusSucceeded, ExecuteAt: t0.UnixMilli()})
			forged, err := json.Marshal(retention.SweepState{Pending: &retention.SweepBatch{N: 1, StartedAt: t0.UnixMilli(), Tallied: tallied, Records: recs},
				UpdatedAt: e.clock.Now().UnixMilli()})
			require.NoError(t, err)
			kv, err := e.js.KeyValue(t.Context(), retention.DefaultBucket)
			require.NoError(t, err)
			_, err = kv.Put(t.Context(), "sweep", forged)
			require.NoError(t, err)

			// Unrecoverable records are not removed in this configuration
			// (no unrecoverable retention), even listed as unrecoverable.
			sw := e.sweeper(t, retention.Config{})
			rep, err := sw.Sweep(t.Context())
			require.NoError(t, err)

			for _, id := range live {
				assert.False(t, e.gone(t, id), "live record %s kept", id)
			}
			assert.True(t, e.gone(t, old), "the one removable record of the batch is removed")
			assert.Equal(t, 1, rep.Removed())
			assert.Equal(t, len(live), rep.Dropped)
		})
	}
}

// A sweep state reset to {} (a stranger, or a bug) does not make batch
// numbers repeat: a fresh sweeper (another instance, a restart) numbers on
// after the tallies and the archive's manifests, so the manifest of an
// earlier batch is never overwritten and the records removed are counted.
func TestAResetSweepCounterNeverRepeatsABatchNumber(t *testing.T) {
	e := newRetentionEnv(t, nil)
	p := e.populate(t)
	sink, err := archive.OpenDir(t.TempDir())
	require.NoError(t, err)
	sw := e.sweeper(t, retention.Config{Archive: sink, Batch: 3})
	rep, err := sw.Sweep(t.Context())
	require.NoError(t, err)
	require.Equal(t, uint64(1), rep.Batch)
	first, err := archive.ReadManifest(t.Context(), sink, 1)
	require.NoError(t, err)

	kv, err := e.js.KeyValue(t.Context(), retention.DefaultBucket)
	require.NoError(t, err)
	_, err = kv.Put(t.Context(), "sweep", []byte(`{}`))
	require.NoError(t, err)

	again := e.sweeper(t, retention.Config{Archive: sink, Batch: 3})
	rep, err = again.Sweep(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(2), rep.Batch, "numbering goes on after the batch already done")
	kept, err := archive.ReadManifest(t.Context(), sink, 1)
	require.NoError(t, err)
	assert.Equal(t, first, kept, "the first batch's manifest is not overwritten")
	s, _ := e.tallied(t)
	assert.Equal(t, int64(6), s, "both batches are counted")
	for _, id := range p.old {
		assert.True(t, e.gone(t, id))
	}
}
