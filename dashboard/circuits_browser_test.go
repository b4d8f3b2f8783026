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
		c, ok := circuit.Evolve(c, time.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "smtp maintenance"})
		c, _ = circuit.Evolve(c, time.Now(), circuit.Policy{}, circuit.Refusals{N: 12})
		return c, ok
	})
	require.NoError(t, err)
	other := circuit.Function{Context: mailer.ContextName, Processor: "Ledger", Name: "post"}
	_, _, _, err = s.circuits.Update(t.Context(), other, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, time.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "no failures yet"})
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

// A record whose function's circuit is open says so on its page: what it
// waits for, since when, the circuit's last real failure as such; its
// prepare is offered as the circuit's probe, and sends the probe flag; a
// circuit an operator opened offers no prepare at all.
func TestBrowserRecordWaitsForItsCircuit(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 2, 0, false)
	fn := circuit.Of(mailer)
	p, err := circuit.Policy{}.Resolve()
	require.NoError(t, err)
	_, _, _, err = s.circuits.Update(t.Context(), fn, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, time.Now(), p, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Instance: "i1",
			Last: circuit.Failure{Code: "Unavailable", Message: "smtp 451: try again later"}})
	})
	require.NoError(t, err)

	ctx := tab(t)
	do(t, ctx, "open a record", chromedp.Navigate(s.http.URL+"/record?id="+s.greylisted[0]))
	until(t, ctx, "the circuit banner", `document.querySelector('#circuit-wait') !== null`)
	banner := text(t, ctx, "#circuit-wait")
	assert.Contains(t, banner, "Waiting for the circuit of "+fn.String()+": open since")
	assert.Contains(t, banner, "The recovery drain prepares this record once the circuit closes")
	assert.Contains(t, banner, "The circuit's last real failure (of another event): smtp 451: try again later")
	until(t, ctx, "the prepare is offered as the probe", `document.querySelector('#do-prepare')?.textContent === "Prepare as the circuit's probe"`)
	do(t, ctx, "prepare as the probe", chromedp.Click("#do-prepare"))
	until(t, ctx, "accepted", `document.querySelector('#action-ok') !== null`)
	st, _, err := s.circuits.Get(t.Context(), fn)
	require.NoError(t, err)
	_, ok := st.ProbeOf(time.Now(), s.greylisted[0])
	assert.True(t, ok, "the replay of this record is the circuit's probe: %+v", st)

	_, _, _, err = s.circuits.Update(t.Context(), fn, func(c circuit.State) (circuit.State, bool) {
		return circuit.Evolve(c, time.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "smtp maintenance"})
	})
	require.NoError(t, err)
	do(t, ctx, "open the other record", chromedp.Navigate(s.http.URL+"/record?id="+s.greylisted[1]))
	until(t, ctx, "the banner of a forced circuit", `document.querySelector('#circuit-wait')?.textContent.includes("opened by an operator")`)
	until(t, ctx, "the actions", `document.querySelector('#replay-actions, #no-replay') !== null`)
	assert.Equal(t, 0, eval[int](t, ctx, `document.querySelectorAll('#do-prepare, #do-force').length`), "nothing can run")
}
