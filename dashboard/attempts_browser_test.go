package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/examples/orders"
)

// The record page shows the attempts as a timeline: the first failure and
// each replay, run by the orders service's processor (its instance and
// build), the final failure once the retries are exhausted, and a later
// replay live.
func TestBrowserAttemptTimeline(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, false)
	id := s.greylisted[0]
	ctx := t.Context()
	_, err := s.svc.Execute(ctx, id, aggregate.ApplyRetrySpec{MaxRetries: 2, MinBackoff: 60, ExecutionTimeout: 60}, aggregate.Meta{Actor: "test", Reason: "two retries"})
	require.NoError(t, err)
	s.mail.FailWith(orders.ErrGreylisted)
	for attempt := int32(1); attempt <= 2; attempt++ {
		_, err := s.svc.Execute(ctx, id, aggregate.PrepareCompensation{}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			v, err := s.index.Get(ctx, id)
			return err == nil && v.State.Status == aggregate.StatusFailed && v.State.Attempt() == attempt
		}, 30*time.Second, 10*time.Millisecond, "replay %d failed and is indexed", attempt)
	}

	tb := tab(t)
	do(t, tb, "open the record", chromedp.Navigate(s.http.URL+"/record?id="+id))
	until(t, tb, "three attempts and the final failure", `document.querySelectorAll('#attempts-list li').length === 4`)
	outcomes := eval[[]string](t, tb, `[...document.querySelectorAll('#attempts-list li')].map(li => li.dataset.outcome || "final:" + li.dataset.final)`)
	assert.Equal(t, []string{"FAILED", "FAILED", "FAILED", "final:RETRIES_EXHAUSTED"}, outcomes)
	instances := eval[[]string](t, tb, `[...document.querySelectorAll('#attempts-list .tl-instance')].map(e => e.textContent)`)
	assert.Equal(t, []string{s.app.Processor.Instance(), s.app.Processor.Instance(), s.app.Processor.Instance()}, instances, "each attempt names the instance that ran it")
	assert.Equal(t, 3, eval[int](t, tb, `document.querySelectorAll('#attempts-list progress.tl-bar').length`), "every attempt has a known start and duration")
	first := text(t, tb, `#attempts-list li[data-attempt="0"]`)
	assert.Contains(t, first, "First failure")
	assert.Contains(t, first, "Greylisted")
	assert.Contains(t, text(t, tb, `#attempts-list li[data-final]`), "2 of 2 retries used")
	screenshot(t, tb, "dashboard-attempts.png")

	// A force-prepare replays once more; the timeline follows live.
	s.mail.FailWith(nil)
	_, err = s.svc.Execute(ctx, id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test", Reason: "mail is back"})
	require.NoError(t, err)
	until(t, tb, "the succeeded replay, live", `document.querySelector('#attempts-list li:last-child')?.dataset.outcome === "SUCCEEDED"`)
	assert.Equal(t, "3", eval[string](t, tb, `document.querySelector('#attempts-list li:last-child').dataset.attempt`))
	assert.Equal(t, 5, eval[int](t, tb, `document.querySelectorAll('#attempts-list li').length`), "the final failure stays where it happened")
}
