package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
)

// The overview's summary shows each function's circuit once, with since
// when it is open and how many calls it refused, and an operator closes it
// there with a reason; a function whose circuit is open without failures
// is listed under the summary.
func TestBrowserOverviewCircuits(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 2, 1, false)
	fn := circuit.Of(mailer)
	_, _, _, err := s.circuits.Update(t.Context(), fn, func(c circuit.State) (circuit.State, bool) {
		c, ok := c.ByOperator(time.Now(), circuit.Open, "ops", "smtp maintenance")
		return c.WithRefused(12, time.Now()), ok
	})
	require.NoError(t, err)
	other := circuit.Function{Context: mailer.ContextName, Processor: "Ledger", Name: "post"}
	_, _, _, err = s.circuits.Update(t.Context(), other, func(c circuit.State) (circuit.State, bool) {
		return c.ByOperator(time.Now(), circuit.Open, "ops", "no failures yet")
	})
	require.NoError(t, err)

	ctx := tab(t)
	do(t, ctx, "open the overview", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "the summary shows the open circuit", `document.querySelector('#summary-table [data-circuit="`+fn.String()+`"]')?.textContent === "open"`)
	assert.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('#summary-table [data-circuit]').length`), "once per function, in its first group")
	row := text(t, ctx, `#summary-table tbody tr:first-child`)
	assert.Contains(t, row, "12 refused")
	assert.Contains(t, row, "since")
	until(t, ctx, "the circuit without failures", `document.querySelector('#circuits-elsewhere')?.textContent.includes("`+other.String()+`")`)

	// Close it, first without a reason.
	do(t, ctx, "unfold the close form", chromedp.Click(`#summary-table details.circuit-act summary`))
	do(t, ctx, "close without a reason", chromedp.Click(`#summary-table details.circuit-act button`))
	until(t, ctx, "a reason is asked for", `document.querySelector('#summary-table .circuit-result')?.textContent.includes("Say why")`)
	do(t, ctx, "close with a reason", chromedp.SendKeys(`#summary-table .circuit-reason`, "smtp is back"),
		chromedp.Click(`#summary-table details.circuit-act button`))
	until(t, ctx, "the circuit is closed", `document.querySelector('#summary-table [data-circuit="`+fn.String()+`"]')?.textContent === "closed"`)
	st, _, err := s.circuits.Get(t.Context(), fn)
	require.NoError(t, err)
	assert.Equal(t, circuit.Closed, st.Phase)
	tr, _ := st.LastTransition()
	assert.Equal(t, "smtp is back", tr.Reason, "audited with the reason")
	screenshot(t, ctx, "dashboard-overview-circuits.png")
}
