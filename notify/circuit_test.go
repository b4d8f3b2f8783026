package notify

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/internal/testwait"
)

var mailerCircuit = circuit.Function{Context: "orders", Processor: "Mailer", Name: "send"}

// The circuit's transitions become notifications: it opened (its
// failures, an operator), its probe failed, it closed; the other
// revisions (a probe claimed, refused calls counted) notify nothing. A
// circuit that opens again within the dedup window is not notified again.
func TestNotifierSendsCircuitTransitions(t *testing.T) {
	e := newEnv(t)
	store, err := circuit.OpenStore(t.Context(), e.js, circuit.WithClock(e.clock))
	require.NoError(t, err)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "dedupWindow": "1h", "endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}],
		"rules": [{"events": ["circuit_opened", "circuit_probe_failed", "circuit_closed"], "processor": "Mailer", "endpoint": "ops"}]}`)
	e.start(t, cfg)
	testwait.For(t, "the circuit consumer", func() bool {
		_, err := e.js.Consumer(t.Context(), store.Stream(), DefaultDurable+"-circuits")
		return err == nil
	})
	p, err := circuit.Policy{CoolDown: 10 * time.Second, ProbeFailures: 1}.Resolve()
	require.NoError(t, err)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	set := func(change func(circuit.State) (circuit.State, bool)) {
		t.Helper()
		_, _, changed, err := store.Update(t.Context(), mailerCircuit, change)
		require.NoError(t, err)
		require.True(t, changed)
	}
	last := circuit.Failure{Code: "Unavailable", Message: "smtp 451: mail service unavailable"}
	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, t0, p, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Last: last, Instance: "i1"})
	})
	testwait.For(t, "circuit_opened", func() bool { return len(rcv.ofType(TypeCircuitOpened)) == 1 })
	c := rcv.ofType(TypeCircuitOpened)[0].body.Circuit
	require.NotNil(t, c)
	assert.Equal(t, "orders.Mailer.send", c.Function)
	assert.Equal(t, "consecutive_failures", c.Cause)
	assert.Equal(t, 20, c.Failures)
	assert.Equal(t, "Unavailable", c.ErrorCode)
	assert.Equal(t, last.Message, c.ErrorMsg)

	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, at(time.Second), circuit.Policy{}, circuit.Refusals{N: 7})
	})
	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, at(10*time.Second), p, circuit.Claim{Instance: "i1", ID: "p1"})
	})
	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, at(11*time.Second), p, circuit.ProbeFailure{ID: "p1", Last: last, Jitter: 0})
	})
	testwait.For(t, "circuit_probe_failed", func() bool { return len(rcv.ofType(TypeCircuitProbeFailed)) == 1 })
	assert.Equal(t, int64(20000), rcv.ofType(TypeCircuitProbeFailed)[0].body.Circuit.CoolDownMs)

	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, at(20*time.Second), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "smtp is back"})
	})
	testwait.For(t, "circuit_closed", func() bool { return len(rcv.ofType(TypeCircuitClosed)) == 1 })
	cl := rcv.ofType(TypeCircuitClosed)[0].body.Circuit
	assert.Equal(t, "operator", cl.Cause)
	assert.Equal(t, "ops", cl.Actor)
	assert.Equal(t, int64(7), cl.Refused)

	// It opens again within the window: de-duplicated.
	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, at(30*time.Second), p, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Last: last, Instance: "i1"})
	})
	set(func(s circuit.State) (circuit.State, bool) {
		return circuit.Evolve(s, at(40*time.Second), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "again"})
	})
	testwait.For(t, "the second close is not notified either", func() bool {
		c, err := e.js.Consumer(t.Context(), store.Stream(), DefaultDurable+"-circuits")
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Stream >= 7
	})
	assert.Len(t, rcv.requests(), 3, "one notification per kind in the window; refused counts and claims notify nothing")
}

// A revision notifies only the transition it made.
func TestCircuitNoteOnlyForItsOwnTransition(t *testing.T) {
	e := newEnv(t)
	store, err := circuit.OpenStore(t.Context(), e.js, circuit.WithClock(e.clock))
	require.NoError(t, err)
	p, err := circuit.Policy{}.Resolve()
	require.NoError(t, err)
	s, _ := circuit.Evolve(circuit.New(mailerCircuit), t0, p, circuit.Trip{Cause: circuit.CauseRatio, Failures: 11, Calls: 20, Instance: "i"})
	note, ok, err := circuitNote(store, circuitSubject+mailerCircuit.String(), jsonOf(t, s), "")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, TypeCircuitOpened, note.Type)
	assert.Equal(t, "Mailer", note.Function().ProcessorName)
	flushed, _ := circuit.Evolve(s, t0.Add(time.Second), circuit.Policy{}, circuit.Refusals{N: 3})
	_, ok, err = circuitNote(store, circuitSubject+mailerCircuit.String(), jsonOf(t, flushed), "")
	require.NoError(t, err)
	assert.False(t, ok, "a count of refused calls is no transition")
	_, ok, err = circuitNote(store, circuitSubject+mailerCircuit.String(), nil, "DEL")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = circuitNote(store, circuitSubject+mailerCircuit.String(), []byte(`{"phase":"AJAR"}`), "")
	assert.ErrorIs(t, err, circuit.ErrInvalid, "validated: a bad entry is quarantined")
}

func jsonOf(t *testing.T, s circuit.State) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return b
}
