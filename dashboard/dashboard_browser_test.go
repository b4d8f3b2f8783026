package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
)

// The overview shows the six views with their counts, the summary by
// function × error code and the backlog chart; it stays usable on a
// narrow window.
func TestBrowserOverview(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 5, 2, false)
	ctx := tab(t)
	do(t, ctx, "open the overview", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "the live counts arrive", `document.querySelector('#view-to-retry .n')?.textContent === "5"`)
	assert.Equal(t, "2", text(t, ctx, "#view-unrecoverable .n"), "the full mailboxes are unrecoverable")
	assert.Equal(t, "0", text(t, ctx, "#view-succeeded .n"))
	until(t, ctx, "the summary is drawn", `document.querySelectorAll('#summary tbody tr').length === 2`)
	summary := text(t, ctx, "#summary")
	assert.Contains(t, summary, "Mailer.confirmOrder")
	assert.Contains(t, summary, "Greylisted")
	assert.Contains(t, summary, "MailboxFull")
	until(t, ctx, "the backlog chart is drawn", `document.querySelector('#trend svg polyline.due') !== null`)
	screenshot(t, ctx, "dashboard-overview.png")

	// Live: a record that succeeds moves between the counts without a reload.
	_, err := s.svc.Execute(t.Context(), s.greylisted[0], aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err)
	until(t, ctx, "the replayed record is counted as succeeded", `document.querySelector('#view-succeeded .n')?.textContent === "1"`)
	assert.Equal(t, "4", text(t, ctx, "#view-to-retry .n"))

	// A summary group opens its batch: the search of that group with the
	// batch panel open.
	do(t, ctx, "batch the MailboxFull group", chromedp.Click(`#summary-table tbody tr:nth-child(2) a[href$="#batch"]`))
	until(t, ctx, "the group's batch", `location.pathname === "/search" && document.querySelector('#batch-details')?.open && document.querySelectorAll('#records-table tbody tr').length === 2`)
	assert.Contains(t, text(t, ctx, "#batch-details"), "errorCode=MailboxFull")
	do(t, ctx, "back to the overview", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "the live counts", `document.querySelector('#view-succeeded .n')?.textContent === "1"`)

	// Legible in light and dark: the colours follow prefers-color-scheme.
	assert.Equal(t, "rgb(247, 247, 248)", eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`))
	do(t, ctx, "prefer dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	assert.Equal(t, "rgb(17, 19, 23)", eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`))
	assert.Equal(t, "rgb(230, 232, 235)", eval[string](t, ctx, `getComputedStyle(document.body).color`))

	do(t, ctx, "narrow window", chromedp.EmulateViewport(390, 844))
	assert.True(t, eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth + 1`), "no horizontal scrolling of the page at 390 px")
}

// Search: a filter set in the form is in the URL, the results match it,
// and a record opens with its state, original event, stack trace,
// schedule and history; a force-prepare with a reason changes it live.
func TestBrowserSearchRecordAndForcePrepare(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 3, 2, false)
	want := s.withStack(t)
	ctx := tab(t)
	do(t, ctx, "open search", chromedp.Navigate(s.http.URL+"/search"))
	until(t, ctx, "all records listed", `document.querySelectorAll('#records-table tbody tr').length === 6`)
	// With the keyboard only: focus the field, type, press Enter.
	do(t, ctx, "filter by error code",
		chromedp.SetValue(`select[name="sort"]`, "retries"),
		chromedp.Focus(`input[name="errorCode"]`),
		chromedp.KeyEvent("MailboxFull"),
		chromedp.KeyEvent(kb.Enter))
	until(t, ctx, "the filtered page", `location.search.includes("errorCode=MailboxFull") && document.querySelectorAll('#records-table tbody tr').length === 2`)
	assert.Contains(t, eval[string](t, ctx, `location.search`), "sort=retries", "the sort is in the URL too")
	assert.Equal(t, "2 matching records", text(t, ctx, "#count"))
	assert.Equal(t, "MailboxFull", eval[string](t, ctx, `document.querySelector('input[name="errorCode"]').value`), "the form shows the URL's query")
	// These navigations also leave pages behind for the back button: their
	// live streams must be closed, or the browser's six connections to
	// the server run out and the force-prepare below never leaves.
	do(t, ctx, "a next-retry range before every record", chromedp.Navigate(s.http.URL+"/search?nextRetryAtTo=2000-01-01T00:00:00Z"))
	until(t, ctx, "no record", `document.querySelector('#count').textContent === "0 matching records" && document.querySelector('input[name="nextRetryAtTo"]').value.startsWith("2000-01-01T00:00")`)
	do(t, ctx, "a next-retry range from then on", chromedp.Navigate(s.http.URL+"/search?errorCode=MailboxFull&nextRetryAtFrom=2000-01-01T00:00:00Z"))
	until(t, ctx, "both records", `document.querySelectorAll('#records-table tbody tr').length === 2`)
	assert.True(t, eval[bool](t, ctx, `[...document.querySelectorAll('#records-table tbody tr')].every(r => r.lastElementChild.textContent === "–")`),
		"an UNRECOVERABLE record shows no next retry: the scheduler does not retry it")
	do(t, ctx, "open a bookmarked query", chromedp.Navigate(s.http.URL+"/search?errorCode=ConnectionReset&recoverable=RECOVERABLE"))
	until(t, ctx, "its one record", `document.querySelectorAll('#records-table tbody tr').length === 1 && document.querySelector('select[name="recoverable"]').value === "RECOVERABLE"`)

	do(t, ctx, "open the record", chromedp.Click(`#records-table tbody tr a`))
	until(t, ctx, "the record page", `document.querySelector('#status') !== null`)
	id := eval[string](t, ctx, `new URLSearchParams(location.search).get("id")`)
	require.Equal(t, want, id)
	assert.Equal(t, "FAILED", text(t, ctx, "#status"))
	assert.Equal(t, "RECOVERABLE", text(t, ctx, "#recoverable"))
	assert.Equal(t, "ConnectionReset", text(t, ctx, "#error-code"))
	until(t, ctx, "the original event's body from the event store", `document.querySelector('#event-body')?.textContent.includes("ada+crash@example.com")`)
	assert.Contains(t, text(t, ctx, "#event-body"), `"customer": "Ada"`)
	until(t, ctx, "the computed schedule: the default spec's 10 retries", `document.querySelectorAll("#schedule tbody tr").length === 10`)
	assert.Contains(t, text(t, ctx, "#error"), "connection reset by peer")
	assert.True(t, eval[bool](t, ctx, `document.querySelector('pre.stack details') !== null && !document.querySelector('pre.stack details').open`), "later frames are collapsed")
	until(t, ctx, "the history", `document.querySelectorAll('#history-table tbody tr').length === 1`)
	screenshot(t, ctx, "dashboard-record.png")
	do(t, ctx, "expand the frames", chromedp.Click("#expand-stack"))
	assert.True(t, eval[bool](t, ctx, `[...document.querySelectorAll('pre.stack details')].every(d => d.open)`))
	do(t, ctx, "copy the trace", chromedp.Click("#copy-stack"))
	until(t, ctx, "the copy button says so", `document.querySelector('#copy-stack').textContent === "Copied"`)

	// Force-prepare needs a reason; with one, the replay succeeds and the
	// page follows the record live.
	do(t, ctx, "force-prepare without a reason", chromedp.Click("#do-force"))
	until(t, ctx, "the reason is asked for", `document.querySelector('#action-result')?.textContent.includes("needs a reason")`)
	do(t, ctx, "force-prepare with a reason",
		chromedp.SendKeys("#force-reason", "mx.example.com is back"),
		chromedp.Click("#do-force"))
	until(t, ctx, "the record succeeds, live", `document.querySelector('#status')?.textContent === "SUCCEEDED"`)
	until(t, ctx, "the history shows the command with its reason", `document.querySelector('#history-table')?.textContent.includes("mx.example.com is back")`)
	hist := text(t, ctx, "#history-table")
	assert.Contains(t, hist, "force_prepare_compensation")
	assert.Contains(t, hist, "local", "the actor")
	assert.Equal(t, aggregate.StatusSucceeded, s.status(t, id))

	// The banner follows the record: it says what it is now, as the State
	// panel does (issue 30, item 4).
	until(t, ctx, "the banner follows the record", `document.querySelector('#action-status')?.textContent === "SUCCEEDED"`)
	assert.Contains(t, text(t, ctx, "#action-ok"), "Force-prepare accepted at version 2")
	assert.NotContains(t, text(t, ctx, "#action-ok"), "PREPARED", "the banner does not keep the state the command left")
	// A succeeded record offers no replay, and says why.
	until(t, ctx, "no replay is offered", `document.querySelector('#do-prepare') === null && document.querySelector('#do-force') === null && document.querySelector('#no-replay') !== null`)
	assert.Contains(t, text(t, ctx, `#unavailable li[data-action="prepare_compensation"]`), "the record has succeeded")
}

// The retry-spec form previews the schedule the new spec gives before it
// is applied.
func TestBrowserRetrySpecPreview(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, false)
	ctx := tab(t)
	do(t, ctx, "open the record", chromedp.Navigate(s.http.URL+"/record?id="+s.greylisted[0]))
	until(t, ctx, "the schedule under the record's spec (5 retries)", `document.querySelectorAll('#schedule tbody tr').length === 5`)
	do(t, ctx, "propose 2 retries", chromedp.SetValue("#spec-maxRetries", "2"), chromedp.Click("#do-preview"))
	until(t, ctx, "the preview", `document.querySelectorAll('#spec-preview tbody tr').length === 2`)
	assert.Contains(t, text(t, ctx, "#spec-preview"), "maxRetries 2")
	do(t, ctx, "apply", chromedp.Click("#do-spec"))
	until(t, ctx, "the record's schedule follows the new spec", `document.querySelectorAll('#schedule tbody tr').length === 2`)
}

// A batch from a search: the dry run says how many would be applied and
// rejected, then the confirmed run streams its progress and shows its
// request id.
func TestBrowserBatchDryRunThenApply(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 4, 1, false)
	s.succeed(t, s.greylisted[0])
	ctx := tab(t)
	do(t, ctx, "open the batch of the mailer's records", chromedp.Navigate(s.http.URL+"/search?processor=Mailer#batch"))
	until(t, ctx, "the batch panel", `document.querySelector('#batch-dry') !== null && document.querySelector('#batch-details').open`)
	until(t, ctx, "the count before any dry run", `document.querySelector('#batch-matched').textContent === "5 records selected"`)
	do(t, ctx, "dry run", chromedp.Click("#batch-dry"))
	until(t, ctx, "the preview", `document.querySelector('#would-apply') !== null`)
	assert.Equal(t, "4", text(t, ctx, "#would-apply"), "the failed records would be prepared")
	assert.Equal(t, "1", text(t, ctx, "#would-reject"), "the succeeded one would not")
	assert.Contains(t, text(t, ctx, "#batch-preview"), "IllegalState")
	for _, id := range append(s.greylisted[1:], s.full...) {
		assert.Equal(t, aggregate.StatusFailed, s.status(t, id), "a dry run touches nothing")
	}
	screenshot(t, ctx, "dashboard-batch.png")

	do(t, ctx, "confirm", chromedp.Click("#batch-confirm"))
	until(t, ctx, "the run ends", `document.querySelector('#batch-done') !== null`)
	assert.Equal(t, "1", eval[string](t, ctx, `String(document.querySelector('#batch-progress').position)`), "the bar is full")
	reqID := text(t, ctx, "#batch-request-id")
	assert.Len(t, reqID, 36, "a request id is shown")
	assert.Contains(t, text(t, ctx, "#batch-status"), "applied 4")
	assert.Equal(t, "/search?processor=Mailer", eval[string](t, ctx, `new URL(document.querySelector('#batch-back').href).pathname + new URL(document.querySelector('#batch-back').href).search`),
		"a way back to the selection")
	do(t, ctx, "a new dry run", chromedp.Click("#batch-again"))
	until(t, ctx, "the form is ready again", `document.querySelector('#batch-out').textContent === "" && document.activeElement.id === "batch-dry"`)
	require.Eventually(t, func() bool {
		for _, id := range append(s.greylisted[1:], s.full...) {
			if s.status(t, id) != aggregate.StatusSucceeded {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "every prepared record was replayed and succeeded")
}

// A viewer signs in with a token, sees records but no action controls,
// and the server refuses a command sent from the viewer's page anyway.
func TestBrowserViewerSeesNoActions(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, true)
	ctx := tab(t)
	do(t, ctx, "open a record while signed out", chromedp.Navigate(s.http.URL+"/record?id="+s.greylisted[0]))
	// Ready once its script handles the form (the button is enabled then);
	// a click before that would submit the form to the page itself.
	until(t, ctx, "the sign-in page", `location.pathname === "/signin" && document.querySelector('#signin') !== null && !document.querySelector('#signin').disabled`)
	do(t, ctx, "a wrong token", chromedp.SendKeys("#token", "wrong-token-0123456789"), chromedp.Click("#signin"))
	until(t, ctx, "the refusal", `document.querySelector('#signin-result .error') !== null`)
	assert.NotContains(t, eval[string](t, ctx, `document.body.innerText + location.href`), "wrong-token-0123456789", "the token is shown nowhere")
	do(t, ctx, "sign in as the viewer", chromedp.SendKeys("#token", viewerToken), chromedp.Click("#signin"))
	until(t, ctx, "back on the record", `location.pathname === "/record" && document.querySelector('#status') !== null`)
	assert.NotContains(t, eval[string](t, ctx, `location.href`), viewerToken, "the token never enters a URL")
	assert.Equal(t, "alice · viewer", text(t, ctx, "#who-name"))
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#actions-panel').classList.contains('hidden') && document.querySelectorAll('#actions button').length === 0`), "no action controls for a viewer")
	assert.False(t, eval[bool](t, ctx, `document.cookie.includes("amends_session")`), "the session cookie is HttpOnly")

	// The page's own fetch with the session's CSRF token is still refused:
	// the server enforces the role.
	status := eval[float64](t, ctx, `fetch("/ui/v1/session").then(r => r.json()).then(me => fetch("/api/v1/records/`+s.greylisted[0]+`/prepare_compensation",
		{method: "POST", headers: {"Content-Type": "application/json", "X-CSRF-Token": me.csrf}, body: "{}"})).then(r => r.status)`)
	assert.Equal(t, float64(http.StatusForbidden), status)

	do(t, ctx, "search as the viewer", chromedp.Navigate(s.http.URL+"/search#batch"))
	until(t, ctx, "the results", `document.querySelectorAll('#records-table tbody tr').length === 1`)
	assert.True(t, eval[bool](t, ctx, `document.querySelector('#batch').classList.contains('hidden') && document.querySelector('#batch-dry') === null`), "no batch controls for a viewer")
	assert.Equal(t, aggregate.StatusFailed, s.status(t, s.greylisted[0]))
}

// A page of another origin that posts a command to the dashboard's server
// (with the browser's session cookie, since both are on 127.0.0.1) is
// refused, and the record is untouched.
func TestBrowserCrossOriginPostRefused(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, false)
	id := s.greylisted[0]
	evil := newEvilSite(t, s.http.URL+"/api/v1/records/"+id+"/force_prepare_compensation")
	ctx := tab(t)
	do(t, ctx, "get a dashboard session", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "signed in locally", `document.querySelector('#who-name')?.textContent.startsWith("local")`)
	before, err := s.index.Get(t.Context(), id)
	require.NoError(t, err)

	do(t, ctx, "visit the other site", chromedp.Navigate(evil))
	do(t, ctx, "submit its form to the dashboard's server", chromedp.Click("#go"))
	until(t, ctx, "the server's answer", `document.body.innerText.includes("CrossOrigin")`)
	// A no-cors fetch from that page, with credentials, fares no better.
	do(t, ctx, "back to the other site", chromedp.Navigate(evil))
	assert.Equal(t, "sent", eval[string](t, ctx, `fetch(document.querySelector('#attack').action, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: '{"reason":"x"}'}).then(() => "sent")`))

	after, err := s.index.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, before.Version, after.Version, "the record is untouched")
	assert.Equal(t, aggregate.StatusFailed, after.State.Status)
	assert.True(t, strings.HasPrefix(evil, "http://127.0.0.1:"), "the other site is same-site, another origin: %s", evil)
}

// A batch whose stream is cut (here: the server drops the connection)
// offers to resume it with the same request id, which finishes it without
// running any record twice.
func TestBrowserBatchResumesWithItsRequestID(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 4, 0, false)
	ctx := tab(t)
	do(t, ctx, "open the batch", chromedp.Navigate(s.http.URL+"/search?processor=Mailer#batch"))
	until(t, ctx, "the batch panel", `document.querySelector('#batch-dry') !== null`)
	do(t, ctx, "a slow dry run", chromedp.SetValue("#batch-rate", "1"), chromedp.Click("#batch-dry"))
	until(t, ctx, "the preview", `document.querySelector('#would-apply')?.textContent === "4"`)
	do(t, ctx, "confirm", chromedp.Click("#batch-confirm"))
	until(t, ctx, "the first outcome", `document.querySelector('#batch-progress')?.value >= 1`)
	reqID := text(t, ctx, "#batch-request-id")
	s.http.CloseClientConnections()
	until(t, ctx, "the offer to resume", `document.querySelector('#batch-resume') !== null`)
	do(t, ctx, "resume", chromedp.Click("#batch-resume"))
	until(t, ctx, "the resumed run ends", `document.querySelector('#batch-done')?.textContent === "Done"`)
	assert.Equal(t, reqID, text(t, ctx, "#batch-request-id"), "the same request id")
	status := text(t, ctx, "#batch-status")
	assert.NotContains(t, status, "rejected", "no record ran twice: %s", status)
	require.Eventually(t, func() bool {
		for _, id := range s.greylisted {
			if s.status(t, id) != aggregate.StatusSucceeded {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	for _, id := range s.greylisted {
		v, err := s.index.Get(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, int32(1), v.State.RetryState.Retries, "record %s was prepared once", id)
	}
}
