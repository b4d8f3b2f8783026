package dashboard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/retention"
)

// maxLayoutShift is the cumulative layout shift a page may have: Google's
// "good" threshold.
const maxLayoutShift = 0.1

// watchShifts adds, to every document the tab opens, a PerformanceObserver
// that sums the layout shifts not caused by the reader's input into
// window.__cls.
func watchShifts(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, "observe layout shifts", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__cls = 0; window.__shifts = [];
			new PerformanceObserver(list => { for (const e of list.getEntries()) if (!e.hadRecentInput) {
				window.__cls += e.value;
				window.__shifts.push(e.value.toFixed(3) + " " + e.sources.map(s => (s.node ? (s.node.id || s.node.className || s.node.nodeName) : "?") +
					"@" + Math.round(s.previousRect.y) + "→" + Math.round(s.currentRect.y) + "/" + Math.round(s.previousRect.height) + "→" + Math.round(s.currentRect.height)).join(","));
			} }).observe({ type: "layout-shift", buffered: true });`})
		return err
	}))
}

// settled waits for the page's first full drawing and two frames more,
// and returns its layout shift so far.
func settled(t *testing.T, ctx context.Context, what string) float64 {
	t.Helper()
	until(t, ctx, what+" is drawn", `document.documentElement.dataset.ready === "true"`)
	return eval[float64](t, ctx, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => r(window.__cls), 300))))`)
}

// otherFn is a function of a context no processor of the stack serves: its
// records stay as the test leaves them (a prepared one keeps running).
var otherFn = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "billing", ProcessorName: "Ledger", Name: "post"}

// record creates a record of otherFn with spec and recoverability, then
// runs cmds on it, and waits until the index has it at its last version.
func (s *stack) record(tb testing.TB, n int, spec aggregate.RetrySpec, rec aggregate.Recoverability, cmds ...aggregate.Command) string {
	tb.Helper()
	ctx := tb.Context()
	eid := fmt.Sprintf("evt-%s-%d", tb.Name(), n)
	id := aggregate.RecordID(eid, otherFn)
	res, err := s.svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID: aggregate.EventID{ID: eid, Version: 1, Seq: 1,
			AggregateID: aggregate.WireAggregateID{ContextName: "billing", AggregateName: "invoice", AggregateID: fmt.Sprintf("inv-%d", n), TenantID: aggregate.DefaultTenantID}},
		Function: otherFn, Error: aggregate.ErrorDetails{ErrorCode: "LedgerDown", ErrorMsg: "ledger at ledger-2.internal refused the posting"},
		ExecuteAt: time.Now().UnixMilli(), Recoverable: rec, RetrySpec: &spec,
	}, aggregate.Meta{Actor: "recorder"})
	require.NoError(tb, err)
	version := res.Version
	for _, c := range cmds {
		if a, ok := c.(aggregate.ApplyExecutionSuccess); ok {
			v, err := s.index.Get(ctx, id)
			if err == nil {
				a.Attempt = v.State.Attempt()
			}
			c = a
		}
		r, err := s.svc.Execute(ctx, id, c, aggregate.Meta{Actor: "test", Reason: "set up"})
		require.NoError(tb, err, "%T", c)
		version = r.Version
		require.Eventually(tb, func() bool { v, err := s.index.Get(ctx, id); return err == nil && v.Version == version }, 30*time.Second, 10*time.Millisecond)
	}
	require.Eventually(tb, func() bool { v, err := s.index.Get(ctx, id); return err == nil && v.Version == version }, 30*time.Second, 10*time.Millisecond)
	return id
}

// Every page, drawn with its data at 1280×900 and at 390×844, moves
// nothing once shown (cumulative layout shift at most 0.1, measured with
// a PerformanceObserver) and, at 390 px, scrolls only vertically (issue
// 30, items 1 and 2).
func TestBrowserNoLayoutShiftAndNoSidewaysScroll(t *testing.T) {
	needBrowser(t)
	st := &storm{}
	s := newStack(t, 4, 2, false, withStorm(st))
	st.play(t, s)
	withStack := s.withStack(t)
	_, err := s.svc.Execute(t.Context(), s.greylisted[0], aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.status(t, s.greylisted[0]) == aggregate.StatusSucceeded }, 30*time.Second, 10*time.Millisecond)
	running := s.record(t, 1, aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 60, ExecutionTimeout: 600}, aggregate.Recoverable, aggregate.PrepareCompensation{})
	pages := []string{
		"/", "/search", "/search?processor=Mailer#batch", "/search?executeAtFrom=2000-01-01T00:00:00Z", "/fingerprints",
		"/record?id=" + withStack, "/record?id=" + s.greylisted[0], "/record?id=" + s.full[0], "/record?id=" + running, "/record?id=" + st.refused[0],
		"/circuits", "/circuits/" + circuit.Of(mailer).String(), "/circuits/" + ledger.String(), "/holds", "/audit",
		"/archive", "/archive?sweep=1&record=" + st.archived[0],
	}
	for _, size := range [][2]int64{{1280, 900}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			ctx := tab(t)
			watchShifts(t, ctx)
			do(t, ctx, "size the window", chromedp.EmulateViewport(size[0], size[1]))
			for _, path := range pages {
				do(t, ctx, "open "+path, chromedp.Navigate(s.http.URL+path))
				cls := settled(t, ctx, path)
				shifts := eval[[]string](t, ctx, `window.__shifts`)
				t.Logf("%s at %dpx: cumulative layout shift %.4f", path, size[0], cls)
				assert.LessOrEqual(t, cls, maxLayoutShift, "%s at %dpx: layout shift %.3f (%v)", path, size[0], cls, shifts)
				wide := eval[string](t, ctx, `document.documentElement.scrollWidth > window.innerWidth + 1 ?
					document.documentElement.scrollWidth + " > " + window.innerWidth + ": " + [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(-5).map(e => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join(" ") + " text: " + (() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); const out = []; let n; while ((n = w.nextNode())) { const r = document.createRange(); r.selectNodeContents(n); const b = r.getBoundingClientRect(); if (b.right > window.innerWidth + 1) out.push(n.parentElement.tagName + "." + n.parentElement.className + ":" + n.textContent.slice(0, 40)); } return out.slice(0, 5).join(" | "); })() : ""`)
				assert.Empty(t, wide, "%s at %dpx scrolls sideways", path, size[0])
				// No word breaks one letter a line: a text of more than
				// three lines none of which holds more than two letters.
				letters := eval[string](t, ctx, `(() => { const w = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT); const out = []; let n;
					while ((n = w.nextNode())) { if (n.textContent.trim().length < 4) continue; const r = document.createRange(); r.selectNodeContents(n);
						const lines = [...r.getClientRects()].filter(b => b.width > 0); if (lines.length > 3 && lines.every(b => b.width < 22)) out.push(n.parentElement.tagName + ":" + n.textContent.slice(0, 30)); }
					return out.slice(0, 5).join(" | "); })()`)
				assert.Empty(t, letters, "%s at %dpx breaks words one letter a line", path, size[0])
				if size[0] == 1280 {
					clipped := eval[string](t, ctx, `[...document.querySelectorAll("main table")].filter(t => t.scrollWidth > t.parentElement.clientWidth + 1).map(t => t.id + " " + t.scrollWidth + ">" + t.parentElement.clientWidth).join(", ")`)
					assert.Empty(t, clipped, "%s at 1280px: a table wider than its panel", path)
				}
			}
			if size[0] == 390 {
				screenshot(t, ctx, "dashboard-mobile-record.png")
			}
		})
	}
}

// The action panel offers only what the aggregate would accept on a record
// in each status, and says why the rest is not there (issue 30, item 3).
func TestBrowserActionsOfferOnlyWhatIsAccepted(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 0, 0, false)
	spec := aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 60, ExecutionTimeout: 600}
	failed := s.record(t, 1, spec, aggregate.Recoverable)
	limit := s.record(t, 2, aggregate.RetrySpec{MaxRetries: 0, MinBackoff: 60, ExecutionTimeout: 600}, aggregate.Recoverable)
	running := s.record(t, 3, spec, aggregate.Recoverable, aggregate.PrepareCompensation{})
	succeeded := s.record(t, 4, spec, aggregate.Recoverable, aggregate.PrepareCompensation{}, aggregate.ApplyExecutionSuccess{ExecuteAt: time.Now().UnixMilli()})
	unrecoverable := s.record(t, 5, spec, aggregate.Unrecoverable)
	cases := []struct {
		name, id     string
		offered      []string // the replay buttons
		unavailable  map[string]string
		settingsOpen bool
	}{
		{"FAILED below its limit", failed, []string{"do-prepare", "do-force"}, nil, true},
		{"FAILED with maxRetries 0", limit, []string{"do-force"}, map[string]string{"prepare_compensation": "every retry is used (0 of 0 retries used)"}, true},
		{"PREPARED and running", running, nil, map[string]string{"prepare_compensation": "a replay is running (attempt 1): offered once it times out", "force_prepare_compensation": "offered once it times out"}, true},
		{"SUCCEEDED", succeeded, nil, map[string]string{"prepare_compensation": "the record has succeeded", "force_prepare_compensation": "the record has succeeded"}, false},
		{"UNRECOVERABLE", unrecoverable, []string{"do-prepare", "do-force"}, nil, true},
	}
	ctx := tab(t)
	for _, c := range cases {
		do(t, ctx, "open the "+c.name+" record", chromedp.Navigate(s.http.URL+"/record?id="+c.id))
		until(t, ctx, c.name+": drawn", `document.documentElement.dataset.ready === "true"`)
		offered := eval[[]string](t, ctx, `[...document.querySelectorAll('#replay-actions button')].map(b => b.id)`)
		if c.offered == nil {
			assert.Empty(t, offered, c.name)
			assert.True(t, eval[bool](t, ctx, `document.querySelector('#no-replay') !== null`), "%s: says no replay can be asked for", c.name)
		} else {
			assert.Equal(t, c.offered, offered, c.name)
		}
		for name, why := range c.unavailable {
			assert.Contains(t, text(t, ctx, `#unavailable li[data-action="`+name+`"]`), why, "%s: why %s is not offered", c.name, name)
		}
		n := eval[int](t, ctx, `document.querySelectorAll('#unavailable li').length`)
		assert.Equal(t, len(c.unavailable), n, "%s: only the refused commands are listed as not offered", c.name)
		// The settings are accepted in every status; on a finished record
		// they are folded away.
		assert.Equal(t, 3, eval[int](t, ctx, `document.querySelectorAll('#settings .action').length`), c.name)
		assert.Equal(t, c.settingsOpen, eval[bool](t, ctx, `document.querySelector('#settings').tagName !== "DETAILS" || document.querySelector('#settings').open`), c.name)
		// Only the other classifications are offered by Mark recoverable.
		opts := eval[[]string](t, ctx, `[...document.querySelectorAll('#recoverable-value option')].map(o => o.value)`)
		assert.NotContains(t, opts, eval[string](t, ctx, `document.querySelector('#recoverable').textContent`), c.name)
		// Only a running attempt shows when it times out (item 12).
		assert.Equal(t, c.id == running, eval[bool](t, ctx, `document.querySelector('#times-out') !== null`), "%s: times out shown only while running", c.name)
	}

	// A refusal that still happens (the record moved on meanwhile) shows
	// readable details: times as UTC, not epoch milliseconds.
	do(t, ctx, "open the FAILED record", chromedp.Navigate(s.http.URL+"/record?id="+failed))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true"`)
	// The page stops following the record (its live stream closes when
	// the page is hidden), so it still offers Prepare after the record
	// moved on.
	eval[bool](t, ctx, `dispatchEvent(new Event("pagehide"))`)
	until(t, ctx, "the live stream is closed", `!document.querySelector('#live-dot').classList.contains('on')`)
	_, err := s.svc.Execute(t.Context(), failed, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	do(t, ctx, "prepare from the page, which has not seen that", chromedp.Click("#do-prepare"))
	until(t, ctx, "the refusal", `document.querySelector('#action-result .error') !== null`)
	msg := text(t, ctx, "#action-result")
	assert.Contains(t, msg, "IllegalState")
	assert.Regexp(t, `timeoutAt: \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`, msg, "times are readable")
	assert.NotRegexp(t, `\d{13}`, msg, "no epoch milliseconds")
	assert.Contains(t, msg, "accepted now: no replay command")
}

// The History panel shows what each command changed, field by field, with
// times as UTC (issue 30, item 5); the attempts' bars have a scale (item
// 8); the view cards are named by their visible text (item 9).
func TestBrowserHistoryDiffAndAttemptScale(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, false)
	id := s.greylisted[0]
	s.mail.FailWith(fmt.Errorf("still greylisted"))
	_, err := s.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "ops", Reason: "try now"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := s.index.Get(t.Context(), id)
		return err == nil && v.State.Status == aggregate.StatusFailed && v.Version == 3
	}, 30*time.Second, 10*time.Millisecond)
	ctx := tab(t)
	do(t, ctx, "open the record", chromedp.Navigate(s.http.URL+"/record?id="+id))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true"`)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#history-table tbody tr')].map(r => r.dataset.version)`)
	assert.Equal(t, []string{"3", "2", "1"}, rows, "newest first")
	prepared := text(t, ctx, `#history-table tr[data-version="2"] summary`)
	assert.Contains(t, prepared, "compensation_prepared")
	assert.Contains(t, prepared, "status FAILED → PREPARED")
	assert.Contains(t, prepared, "retries 0 → 1")
	do(t, ctx, "open the prepare's changes", chromedp.Click(`#history-table tr[data-version="2"] details.hist-ev > summary`))
	diff := text(t, ctx, `#history-table tr[data-version="2"] ul.diff`)
	assert.Regexp(t, `retryState\.nextRetryAt \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(.+\) → \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`, diff, "the time before and after, readable")
	assert.NotRegexp(t, `\d{13}`, eval[string](t, ctx, `[...document.querySelectorAll('#history-table summary, #history-table ul.diff')].map(e => e.innerText).join("\n")`), "no epoch milliseconds outside the raw JSON")
	// A live change keeps the open fold open.
	_, err = s.svc.Execute(t.Context(), id, aggregate.ApplyRetrySpec{MaxRetries: 7, MinBackoff: 60, ExecutionTimeout: 30}, aggregate.Meta{Actor: "ops"})
	require.NoError(t, err)
	until(t, ctx, "the new command, live", `document.querySelector('#history-table tr[data-version="4"]') !== null`)
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#history-table tr[data-version="2"] details.hist-ev').open`), "the fold stays open")
	assert.Contains(t, text(t, ctx, `#history-table tr[data-version="4"] summary`), "maxRetries 5 → 7")

	scale := text(t, ctx, "#tl-scale")
	assert.Contains(t, scale, "0")
	assert.Contains(t, scale, "(longest)")
	assert.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll('#attempts-list progress.tl-bar').length`))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#attempts-list progress.tl-bar').getAttribute('aria-label')`), "of the longest attempt's")
	assert.Contains(t, text(t, ctx, `#attempts-list li[data-attempt="1"] .tl-dur`), "ran ")

	do(t, ctx, "open the overview", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true"`)
	assert.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('.view-card[aria-label]').length`), "the cards are named by what they show")
	assert.Equal(t, "Due now", text(t, ctx, "#view-next-retry .label"), "next-retry is named for what it holds (item 12)")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#summary-table thead').textContent`), "Under limit", "the column says what it counts (item 10)")
}

// The search page is a query bar of five common filters, the rest behind
// "More filters", which opens by itself for a query that uses them; a
// query saved by name is offered again after a reload (issue 30, item 7).
func TestBrowserSearchQueryBarAndSavedQueries(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 2, 1, false)
	ctx := tab(t)
	do(t, ctx, "open search", chromedp.Navigate(s.http.URL+"/search"))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true"`)
	assert.False(t, eval[bool](t, ctx, `document.querySelector('#more').open`), "the other filters are folded")
	assert.Equal(t, 5, eval[int](t, ctx, `[...document.querySelectorAll('#filters > label')].length`), "five filters in the bar")
	do(t, ctx, "query the unrecoverable ones", chromedp.SetValue(`select[name="view"]`, "unrecoverable"), chromedp.Click("#apply"))
	until(t, ctx, "the results", `location.search === "?view=unrecoverable" && document.documentElement.dataset.ready === "true" && document.querySelectorAll('#records-table tbody tr').length === 1`)
	do(t, ctx, "save it", chromedp.Click("#save-query"), chromedp.SendKeys("#save-name", "full mailboxes"), chromedp.Click("#save-ok"))
	until(t, ctx, "the saved query", `document.querySelector('.chip[data-name="full mailboxes"]') !== null`)
	do(t, ctx, "leave and come back", chromedp.Navigate(s.http.URL+"/search?recoverable=RECOVERABLE"))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true" && document.querySelectorAll('#records-table tbody tr').length === 2`)
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#more').open`), "a query of the other filters shows them")
	assert.Equal(t, "(1 set)", text(t, ctx, "#more-count"))
	do(t, ctx, "run the saved query", chromedp.Click(`.chip[data-name="full mailboxes"] a`))
	until(t, ctx, "its results", `location.search === "?view=unrecoverable" && document.querySelectorAll('#records-table tbody tr').length === 1`)
	do(t, ctx, "forget it", chromedp.Click(`.chip[data-name="full mailboxes"] button`))
	until(t, ctx, "forgotten", `document.querySelector('.chip') === null && localStorage.getItem("amends.savedQueries") === "[]"`)
}

// The fingerprint page lists the failures by fingerprint with a sample
// message, first and last seen and the records by status; its batch
// action prepares one fingerprint's records after a dry run (issue 30,
// item 6), and addresses in the messages do not split a fingerprint (item
// 16): every greylisted mail, to whichever address, is one fingerprint.
// A fingerprint whose records retention removed shows how many (issue
// 28: the counts survive the records).
func TestBrowserFingerprintsEndToEnd(t *testing.T) {
	needBrowser(t)
	gone := retiredTallies{{Function: mailer, ErrorCode: "550", Fingerprint: "fp-retired", Succeeded: 5, Unrecoverable: 2,
		FirstAt: time.Now().Add(-40 * 24 * time.Hour).UnixMilli(), LastAt: time.Now().Add(-35 * 24 * time.Hour).UnixMilli()}}
	s := newStack(t, 3, 2, false, func(s *stackSetup) { s.cfg.Retired = gone })
	ctx := tab(t)
	do(t, ctx, "open the fingerprints", chromedp.Navigate(s.http.URL+"/fingerprints"))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true"`)
	require.Equal(t, 2, eval[int](t, ctx, `document.querySelectorAll('#fingerprints-table tbody tr').length`), "one fingerprint per problem")
	first := text(t, ctx, "#fingerprints-table tbody tr:first-child")
	assert.Contains(t, first, "Mailer.confirmOrder")
	assert.Contains(t, first, "451 greylisted, try again later", "the sample message")
	assert.Regexp(t, `FAILED\s+3`, first)
	assert.Contains(t, text(t, ctx, "#fp-count"), "2 fingerprints")
	assert.Regexp(t, `ago|now`, text(t, ctx, "#fingerprints-table tbody tr:first-child td:nth-child(3)"), "first seen")
	screenshot(t, ctx, "dashboard-fingerprints.png")

	do(t, ctx, "batch the greylisted fingerprint", chromedp.Click("#fingerprints-table tbody tr:first-child a.fp-batch"))
	until(t, ctx, "its search with the batch open", `location.pathname === "/search" && location.search.startsWith("?fingerprint=fp1-") && document.querySelector('#batch-details')?.open && document.querySelectorAll('#records-table tbody tr').length === 3`)
	do(t, ctx, "dry run", chromedp.Click("#batch-dry"))
	until(t, ctx, "the preview", `document.querySelector('#would-apply')?.textContent === "3"`)
	do(t, ctx, "apply", chromedp.Click("#batch-confirm"))
	until(t, ctx, "done", `document.querySelector('#batch-done')?.textContent === "Done"`)
	require.Eventually(t, func() bool {
		for _, id := range s.greylisted {
			if s.status(t, id) != aggregate.StatusSucceeded {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	for _, id := range s.full {
		assert.Equal(t, aggregate.StatusFailed, s.status(t, id), "the other fingerprint is untouched")
	}
	do(t, ctx, "back to the fingerprints", chromedp.Navigate(s.http.URL+"/fingerprints"))
	until(t, ctx, "drawn", `document.documentElement.dataset.ready === "true"`)
	assert.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#fingerprints-table tbody tr').length`), "only open failures by default")
	do(t, ctx, "show every record", chromedp.SetValue("#fp-status", ""))
	eval[bool](t, ctx, `document.querySelector('#fp-status').dispatchEvent(new Event("change"))`)
	until(t, ctx, "both and the removed one", `document.querySelectorAll('#fingerprints-table tbody tr').length === 3`)
	retired := text(t, ctx, `#fingerprints-table tr[data-fingerprint="fp-retired"]`)
	assert.Contains(t, retired, "7 removed by retention", "the tally of the records retention removed")
	assert.Contains(t, retired, "Mailer.confirmOrder")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('#fingerprints-table tr:not([data-fingerprint="fp-retired"]) .fp-removed').length`),
		"the fingerprints with no removed records say nothing of it")
}

// retiredTallies is a server.Retired of fixed tallies.
type retiredTallies []retention.Tally

func (r retiredTallies) Tallies(context.Context) ([]retention.Tally, error) { return r, nil }
