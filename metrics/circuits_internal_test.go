package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/scheduler"
)

type circuitList []circuit.State

func (l circuitList) List() []circuit.State { return l }

func TestCircuitsCollector(t *testing.T) {
	open := circuit.New(circuit.Function{Context: "shop", Processor: "Mailer", Name: "send"})
	open.Phase, open.RefusedTotal = circuit.Open, 4997
	open.Counts = circuit.Counts{Opened: 3, HalfOpened: 2, Closed: 0}
	half := circuit.New(circuit.Function{Context: "billing", Processor: "Mailer", Name: "send"})
	half.Phase, half.Counts = circuit.HalfOpen, circuit.Counts{Opened: 1, HalfOpened: 1}
	closed := circuit.New(circuit.Function{Context: "shop", Processor: "Ledger", Name: "post"})
	closed.Counts = circuit.Counts{Opened: 1, HalfOpened: 1, Closed: 1}
	c := Circuits(circuitList{open, half, closed})
	want := `
# HELP amends_circuit_refused_total Calls the function's circuit refused (recorded at once with errorCode CircuitOpen).
# TYPE amends_circuit_refused_total counter
amends_circuit_refused_total{function="Ledger.post"} 0
amends_circuit_refused_total{function="Mailer.send"} 4997
# HELP amends_circuit_state The function's circuit: 0 closed, 1 half-open, 2 open.
# TYPE amends_circuit_state gauge
amends_circuit_state{function="Ledger.post"} 0
amends_circuit_state{function="Mailer.send"} 2
# HELP amends_circuit_transitions_total Transitions of the function's circuit into each state.
# TYPE amends_circuit_transitions_total counter
amends_circuit_transitions_total{function="Ledger.post",to="closed"} 1
amends_circuit_transitions_total{function="Ledger.post",to="half_open"} 1
amends_circuit_transitions_total{function="Ledger.post",to="open"} 1
amends_circuit_transitions_total{function="Mailer.send",to="closed"} 0
amends_circuit_transitions_total{function="Mailer.send",to="half_open"} 3
amends_circuit_transitions_total{function="Mailer.send",to="open"} 4
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want)))
}

func TestSchedulerCollectorDrains(t *testing.T) {
	c := schedulerCollector(func() scheduler.Stats {
		return scheduler.Stats{Drains: scheduler.DrainStats{Started: 2, Steps: 30, Prepared: 5000, Probes: 3, Halved: 1, CanaryFailed: 1, Done: 1}}
	}, fakeIndex{}, time.Now)
	want := `
# HELP amends_scheduler_drains_total Recovery drains after an outage, by event (started, step, prepared, probe, halved, canary_failed, done); canary_failed means the records of a canary the circuit had refused failed, and the drain waits a cool-down before the next.
# TYPE amends_scheduler_drains_total counter
amends_scheduler_drains_total{event="canary_failed"} 1
amends_scheduler_drains_total{event="done"} 1
amends_scheduler_drains_total{event="halved"} 1
amends_scheduler_drains_total{event="prepared"} 5000
amends_scheduler_drains_total{event="probe"} 3
amends_scheduler_drains_total{event="started"} 2
amends_scheduler_drains_total{event="step"} 30
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "amends_scheduler_drains_total"))
}
