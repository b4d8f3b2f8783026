package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rollout"
	"github.com/amends-dev/amends/server"
)

// storm is what the incident pages show during an outage: the mailer's
// circuit open after two re-opens, with records it refused; a running
// recovery drain of another function; an aggregate held by an Ordered
// function.
type storm struct {
	drains  *circuit.Drains
	holds   *processor.Holds
	store   *jsstore.Store
	refused []string
	js      jetstream.JetStream
	// archive holds sweep 1 of the archived records (retention removed
	// them from the event store).
	archive  *archive.Dir
	archived []string
}

// withStorm serves the drains, the holds and the audit log of st.
func withStorm(st *storm) stackOption {
	return func(s *stackSetup) {
		ctx := context.Background()
		var err error
		st.js = s.js
		st.drains, err = circuit.OpenDrains(ctx, s.js, "", 1)
		if err != nil {
			panic(err)
		}
		st.holds, err = processor.OpenHolds(ctx, s.js, 1)
		if err != nil {
			panic(err)
		}
		replays, err := processor.OpenReplays(ctx, s.js, 1)
		if err != nil {
			panic(err)
		}
		if st.store, err = jsstore.New(s.js); err != nil {
			panic(err)
		}
		log, err := audit.Open(ctx, s.js, audit.Config{Storage: jetstream.MemoryStorage})
		if err != nil {
			panic(err)
		}
		if st.archive, err = archive.OpenDir(s.tb.TempDir()); err != nil {
			panic(err)
		}
		s.cfg.Archive = &server.Archive{Sink: st.archive, Store: st.store}
		s.cfg.Circuits.Drains = st.drains
		s.cfg.Audit = log
		s.dash.Audit = log
		s.cfg.Ordering = &server.Ordering{Holds: st.holds, Replays: replays, Records: s.cfg.Commands.(*aggregate.Service), JS: s.js, Store: st.store}
	}
}

var ledger = circuit.Of(otherFn)

// play sets the storm up on s.
func (st *storm) play(t *testing.T, s *stack) {
	t.Helper()
	ctx := t.Context()
	now := time.Now()
	p, err := circuit.Policy{CoolDown: time.Second, ProbeFailures: 1}.Resolve()
	require.NoError(t, err)
	smtp := circuit.Failure{Code: "Unavailable", Message: "smtp 451 4.7.1: try again later", Fingerprint: "fp1-0011223344556677", Recoverable: aggregate.Recoverable}
	fn := circuit.Of(mailer)
	_, _, _, err = s.circuits.Update(ctx, fn, func(c circuit.State) (circuit.State, bool) {
		at := now.Add(-10 * time.Minute)
		c, _ = circuit.Evolve(c, at, p, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Instance: "i1", Last: smtp, FirstFailureAt: at.Add(-30 * time.Second).UnixMilli()})
		for i := range 2 {
			at = at.Add(2 * time.Minute)
			c, _ = circuit.Evolve(c, at, p, circuit.Claim{Instance: "i1", ID: fmt.Sprintf("p%d", i)})
			c, _ = circuit.Evolve(c, at.Add(time.Second), p, circuit.ProbeFailure{ID: fmt.Sprintf("p%d", i), Last: smtp})
		}
		c, _ = circuit.Evolve(c, now.Add(-time.Second), p, circuit.Refusals{N: 42})
		return c, true
	})
	require.NoError(t, err)

	// Two orders whose mails the circuit refused.
	for i := range 2 {
		eid := uuid.NewString()
		id := aggregate.RecordID(eid, mailer)
		_, err := s.svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
			EventID: aggregate.EventID{ID: eid, Version: 1, Seq: uint64(100 + i),
				AggregateID: aggregate.WireAggregateID{ContextName: mailer.ContextName, AggregateName: "order", AggregateID: fmt.Sprintf("refused-%d", i), TenantID: aggregate.DefaultTenantID}},
			Function: mailer, ExecuteAt: now.UnixMilli(), Recoverable: aggregate.Recoverable,
			Error: aggregate.ErrorDetails{ErrorCode: circuit.ErrorCode, Fingerprint: "fp1-aabbccddeeff0011",
				ErrorMsg: "not called: the circuit of " + fn.String() + " is OPEN since now; the event was never tried. The circuit's last real failure (of another event): " + smtp.Message},
		}, aggregate.Meta{Actor: "recorder"})
		require.NoError(t, err)
		st.refused = append(st.refused, id)
	}

	// Ledger.post's circuit closed after an incident; its drain runs.
	_, _, _, err = s.circuits.Update(ctx, ledger, func(c circuit.State) (circuit.State, bool) {
		c, _ = circuit.Evolve(c, now.Add(-20*time.Minute), p, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "ledger db failover"})
		return circuit.Evolve(c, now.Add(-time.Minute), p, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "ledger db is back"})
	})
	require.NoError(t, err)
	st.drain(t, 12, 11, 1)
	st.archiveSweep(t)

	// An Ordered function of context shop fails on version 1 of an order:
	// versions 2 and 3 are held behind it.
	require.NoError(t, st.store.Provision(ctx, "shop"))
	rec, err := recorder.New(s.svc, recorder.WithSleeper(noWait))
	require.NoError(t, err)
	proc, err := processor.New(st.js, st.store, "shop", processor.WithRecorder(rec), processor.WithRecords(s.svc), processor.WithLogger(quiet()),
		processor.WithSleeper(noWait), processor.WithCircuitPolicy(circuit.Policy{Off: true}))
	require.NoError(t, err)
	require.NoError(t, proc.Register(processor.Function{Processor: "Projector", Name: "onStep", AggregateTypes: []string{"order"}},
		func(_ context.Context, d *processor.Delivery) error {
			if d.Stream.Version == 1 {
				return errors.New("projection table locked")
			}
			return nil
		}, processor.Ordered()))
	runCtx, stopRun := context.WithCancel(ctx)
	require.NoError(t, proc.Start(runCtx))
	t.Cleanup(func() { stopRun(); _ = proc.Wait() })
	for v := uint64(1); v <= 3; v++ {
		_, err := st.store.Append(ctx, eventstore.Stream{ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: "o-7"}, CreateTime: now.UnixMilli(),
			Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: json.RawMessage(`{}`)}}}, v-1)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		h, err := st.holds.Get(ctx, api.HoldKey("shop", "Projector", "onStep", "order", "o-7"))
		return err == nil && len(h.Held) == 2
	}, 30*time.Second, 10*time.Millisecond, "two events held behind the failure")
}

// archiveSweep writes sweep 1 of the archive: three mails that failed
// and then succeeded, made on another JetStream (as if retention had
// removed them from this one).
func (st *storm) archiveSweep(t *testing.T) {
	t.Helper()
	elsewhere, err := jsstore.New(natstest.New(t).JetStream())
	require.NoError(t, err)
	svc := aggregate.NewService(elsewhere)
	var recs []archive.Record
	for i := range 3 {
		eid := uuid.NewString()
		id := aggregate.RecordID(eid, mailer)
		for _, c := range []aggregate.Command{
			aggregate.CreateExecutionFailed{EventID: aggregate.EventID{ID: eid, Version: 1, Seq: uint64(10 + i),
				AggregateID: aggregate.WireAggregateID{ContextName: mailer.ContextName, AggregateName: "order", AggregateID: fmt.Sprintf("old-%d", i), TenantID: aggregate.DefaultTenantID}},
				Function: mailer, ExecuteAt: time.Now().Add(-40 * 24 * time.Hour).UnixMilli(), Error: aggregate.ErrorDetails{ErrorCode: "Greylisted", ErrorMsg: "451 try later"}},
			aggregate.ForcePrepareCompensation{},
			aggregate.ApplyExecutionSuccess{ExecuteAt: time.Now().Add(-39 * 24 * time.Hour).UnixMilli()},
		} {
			_, err := svc.Execute(t.Context(), id, c, aggregate.Meta{Actor: "scheduler"})
			require.NoError(t, err)
		}
		hist, err := elsewhere.Load(t.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(t, err)
		recs = append(recs, archive.Record{ID: id, Function: mailer, Streams: hist})
		st.archived = append(st.archived, id)
	}
	_, err = archive.WriteSweep(t.Context(), st.archive, 1, time.Now().Add(-9*24*time.Hour), recs)
	require.NoError(t, err)
}

// drain stores Ledger.post's drain with its counts.
func (st *storm) drain(t *testing.T, released, succeeded, failed int) {
	t.Helper()
	now := time.Now()
	require.NoError(t, st.drains.Put(t.Context(), circuit.Drain{Function: ledger, From: now.Add(-20 * time.Minute).UnixMilli(), To: now.Add(-time.Minute).UnixMilli(),
		Progress: rollout.Progress{Phase: circuit.DrainSteps, Judged: 3, Size: 8, Rate: 50, StartedAt: now.Add(-time.Minute).UnixMilli(),
			Released: released, Succeeded: succeeded, Failed: failed, Note: "step 3: 8 records at 50/s", UpdatedAt: now.UnixMilli()}}))
}

// The incident pages read as an operator reads them during an outage: the
// overview's strip counts the incidents; the circuits page lists the open
// circuit and the running drain; the incident view says since when the
// incident began (not the latest re-open), its re-opens, the refused
// calls, the last real failure as such, the records the circuit refused
// apart, and closes the circuit after a dry run; the drain's view moves
// live; the holds page releases after a dry run and offers the way back;
// a refused record and its fingerprint say "refused by the circuit".
func TestBrowserIncidentConsole(t *testing.T) {
	needBrowser(t)
	st := &storm{}
	s := newStack(t, 3, 0, false, withStorm(st))
	st.play(t, s)
	fn := circuit.Of(mailer).String()
	ctx := tab(t)

	do(t, ctx, "open the overview", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "the incidents strip", `document.querySelector('#inc-held .n').textContent === "1" && document.querySelector('#inc-drains .n').textContent === "1"`)
	until(t, ctx, "records waiting", `document.querySelector('#inc-waiting .n').textContent === "5"`)
	assert.Equal(t, "1", text(t, ctx, "#inc-open .n"), "one circuit open")
	assert.Contains(t, text(t, ctx, "#summary-table"), "2 re-opens", "the summary says the incident's re-opens")

	do(t, ctx, "open the circuits page", chromedp.Navigate(s.http.URL+"/circuits"))
	until(t, ctx, "the circuits", `document.querySelectorAll('#circuits-table tbody tr').length === 2`)
	first := text(t, ctx, "#circuits-table tbody tr:first-child")
	assert.Contains(t, first, fn, "the open circuit first")
	assert.Contains(t, first, "smtp 451")
	assert.Contains(t, text(t, ctx, "#drains-table"), ledger.String())
	assert.Contains(t, text(t, ctx, "#d-count"), "1 running")

	do(t, ctx, "open the incident view", chromedp.Navigate(s.http.URL+"/circuits/"+fn))
	until(t, ctx, "the circuit", `document.querySelector('#state')?.textContent === "open"`)
	assert.Contains(t, text(t, ctx, "#since"), "10m ago", "the incident began with its first opening")
	assert.Contains(t, text(t, ctx, "#since"), "2 re-opens, the latest")
	assert.Equal(t, "42", text(t, ctx, "#refused"))
	assert.Contains(t, text(t, ctx, "#last-failure"), "Last real failure (of another event")
	assert.Contains(t, text(t, ctx, "#last-failure"), "smtp 451 4.7.1: try again later")
	assert.Contains(t, text(t, ctx, "#probe"), "not before")
	until(t, ctx, "the records", `document.querySelector('#rec-refused') !== null`)
	assert.Equal(t, "5 failed, waiting to be retried or drained", text(t, ctx, "#rec-failed"))
	assert.Equal(t, "2 of them refused by the circuit (never tried)", text(t, ctx, "#rec-refused"))
	assert.Equal(t, 5, eval[int](t, ctx, `document.querySelectorAll('#transitions-table tbody tr').length`), "open, half-open, open, half-open, open")
	assert.Contains(t, text(t, ctx, "#transitions-table tbody tr:first-child"), "half-open → open\tprobe_failed\t1 failed of 1")
	assert.Contains(t, text(t, ctx, "#no-holds"), "No aggregate is held")
	screenshot(t, ctx, "dashboard-incident.png")

	// Close it: the run waits for a dry run of the same reason.
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#circuit-close-run').disabled`), "no close before a dry run")
	do(t, ctx, "dry run without a reason", chromedp.Click("#circuit-close-dry"))
	until(t, ctx, "a reason is asked for", `document.querySelector('#circuit-close-result')?.textContent.includes("Say why")`)
	do(t, ctx, "dry run", chromedp.SendKeys("#circuit-close-reason", "smtp relay is back"), chromedp.Click("#circuit-close-dry"))
	until(t, ctx, "the plan", `document.querySelector('#circuit-close-plan') !== null`)
	assert.Contains(t, text(t, ctx, "#circuit-close-plan"), "would become closed")
	c, _, err := s.circuits.Get(t.Context(), circuit.Of(mailer))
	require.NoError(t, err)
	assert.Equal(t, circuit.Open, c.Phase, "a dry run changes nothing")
	do(t, ctx, "close", chromedp.Click("#circuit-close-run"))
	until(t, ctx, "closed", `document.querySelector('#state')?.textContent === "closed"`)
	assert.Contains(t, text(t, ctx, "#since"), "none now: the last ended", "a closed circuit has no incident now")
	assert.Regexp(t, `it lasted 1[01]m`, text(t, ctx, "#since"), "and says how long the last one lasted (from its first opening, 10m and some seconds ago)")
	c, _, err = s.circuits.Get(t.Context(), circuit.Of(mailer))
	require.NoError(t, err)
	assert.Equal(t, circuit.Closed, c.Phase)
	tr, _ := c.LastTransition()
	assert.Equal(t, "smtp relay is back", tr.Reason, "audited with its reason")
	until(t, ctx, "the open form replaces it", `document.querySelector('#circuit-open-dry') !== null`)

	// The drain moves while the page is open.
	do(t, ctx, "open the drain's incident", chromedp.Navigate(s.http.URL+"/circuits/"+ledger.String()))
	until(t, ctx, "the drain", `document.querySelector('#drain-done')?.textContent === "12 released / 0 left of 8"`)
	assert.Equal(t, "92% (11 succeeded, 1 failed)", text(t, ctx, "#drain-ratio"))
	st.drain(t, 20, 18, 2)
	until(t, ctx, "the drain's next step", `document.querySelector('#drain-done')?.textContent.startsWith("20 released")`)
	until(t, ctx, "the live chart", `document.querySelectorAll('#drain-chart polyline.done').length === 1`)

	// Holds: release after a dry run, then back to the selection.
	key := api.HoldKey("shop", "Projector", "onStep", "order", "o-7")
	do(t, ctx, "open the holds", chromedp.Navigate(s.http.URL+"/holds?context=shop"))
	until(t, ctx, "the hold", `document.querySelectorAll('#holds-table tbody tr').length === 1`)
	assert.Contains(t, text(t, ctx, "#holds-table tbody tr"), "2 (v2–3)")
	do(t, ctx, "manage it", chromedp.Click(`#holds-table a.manage`))
	until(t, ctx, "the release form", `document.querySelector('#release-dry') !== null`)
	assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll('#skip-event option').length`))
	do(t, ctx, "dry-run the release", chromedp.SendKeys("#release-reason", "projection table unlocked"), chromedp.Click("#release-dry"))
	until(t, ctx, "the plan", `document.querySelector('#release-plan') !== null`)
	assert.Contains(t, text(t, ctx, "#release-plan"), "would release 2 held events in order")
	h, err := st.holds.Get(t.Context(), key)
	require.NoError(t, err)
	assert.Len(t, h.Held, 2, "a dry run releases nothing")
	do(t, ctx, "release", chromedp.Click("#release-run"))
	until(t, ctx, "released", `document.querySelector('#release-done') !== null`)
	assert.False(t, eval[bool](t, ctx, `document.querySelector('#release-back').classList.contains('hidden')`), "a way back to the form")
	assert.Equal(t, "context=shop", eval[string](t, ctx, `location.search.slice(1)`), "the selection is kept")

	// A refused record and its fingerprint.
	do(t, ctx, "open a refused record", chromedp.Navigate(s.http.URL+"/record?id="+st.refused[0]))
	until(t, ctx, "the refusal", `document.querySelector('#refused-by-circuit') !== null`)
	assert.Contains(t, text(t, ctx, "#refused-by-circuit"), "Refused by the circuit")
	do(t, ctx, "open the fingerprints", chromedp.Navigate(s.http.URL+"/fingerprints"))
	until(t, ctx, "the refused group", `document.querySelector('#fingerprints-table .refused') !== null`)
	row := text(t, ctx, `#fingerprints-table tr[data-fingerprint="fp1-aabbccddeeff0011"]`)
	assert.Contains(t, row, "Refused by the circuit")
	assert.NotContains(t, row, "Unclassified")

	// The archive: a sweep, its records, a history, and a restore of one
	// record after a dry run, which makes it queryable again.
	do(t, ctx, "open the archive", chromedp.Navigate(s.http.URL+"/archive"))
	until(t, ctx, "the sweeps", `document.querySelectorAll('#sweeps-table tbody tr').length === 1`)
	assert.Contains(t, text(t, ctx, "#sweeps-table tbody tr"), "9d ago")
	do(t, ctx, "open sweep 1", chromedp.Click("#sweeps-table a.open-sweep"))
	until(t, ctx, "its records", `document.querySelectorAll('#records-table tbody tr').length === 3`)
	assert.Equal(t, "?sweep=1", eval[string](t, ctx, `location.search`), "the sweep is in the address")
	assert.Contains(t, text(t, ctx, "#restore-what"), "every record of sweep 1")
	arow := fmt.Sprintf(`#records-table tr[data-record="%s"]`, st.archived[0])
	assert.Contains(t, text(t, ctx, arow), "SUCCEEDED")
	do(t, ctx, "show a history", chromedp.Click(arow+" a.show-history"))
	until(t, ctx, "the history", `document.querySelectorAll('#history-table tbody tr').length === 3`)
	assert.Contains(t, text(t, ctx, "#history-table"), "execution_success_applied")
	do(t, ctx, "select the record", chromedp.Click(arow+" input.pick"))
	until(t, ctx, "the restore names it", `document.querySelector('#restore-what').textContent.includes("1 selected record")`)
	do(t, ctx, "dry-run the restore", chromedp.SendKeys("#restore-action-reason", "the customer asks for the receipt"), chromedp.Click("#restore-action-dry"))
	until(t, ctx, "the plan", `document.querySelector('#restore-action-plan') !== null`)
	assert.Contains(t, text(t, ctx, "#restore-action-plan"), "would restore: 1 restored")
	_, err = s.index.Get(t.Context(), st.archived[0])
	assert.Error(t, err, "a dry run restores nothing")
	do(t, ctx, "restore", chromedp.Click("#restore-action-run"))
	until(t, ctx, "restored", `document.querySelector('#restore-action-done') !== null`)
	assert.Contains(t, text(t, ctx, "#restore-action-done"), "restored: 1 restored")
	require.Eventually(t, func() bool { _, err := s.index.Get(t.Context(), st.archived[0]); return err == nil }, 30*time.Second, 10*time.Millisecond,
		"the restored record is queryable again")

	do(t, ctx, "open the audit log", chromedp.Navigate(s.http.URL+"/audit?kind=archive_restore"))
	until(t, ctx, "the restore's entry", `document.querySelector('#audit-table')?.textContent.includes("the customer asks for the receipt")`)
}

// A viewer sees the incident view's actions disabled, with why.
func TestBrowserIncidentViewForAViewer(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, true)
	fn := circuit.Of(mailer)
	_, _, _, err := s.circuits.Update(t.Context(), fn, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, time.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "smtp maintenance"})
	})
	require.NoError(t, err)
	ctx := tab(t)
	do(t, ctx, "open the incident view", chromedp.Navigate(s.http.URL+"/circuits/"+fn.String()))
	until(t, ctx, "the sign-in page", `location.pathname === "/signin" && document.querySelector('#signin') !== null && !document.querySelector('#signin').disabled`)
	do(t, ctx, "sign in as the viewer", chromedp.SendKeys("#token", viewerToken), chromedp.Click("#signin"))
	until(t, ctx, "the circuit", `document.querySelector('#state')?.textContent === "open"`)
	assert.Contains(t, text(t, ctx, "#incident-banner"), "an operator opened it")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#circuit-close-dry').disabled && document.querySelector('#circuit-close-run').disabled`))
	assert.Contains(t, text(t, ctx, "#circuit-close-viewer"), "Only an operator can close circuit")
}
