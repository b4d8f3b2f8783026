package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/circuit"
)

// CircuitSource lists the circuits; *circuit.Watcher satisfies it.
type CircuitSource interface {
	List() []circuit.State
}

var _ CircuitSource = (*circuit.Watcher)(nil)

// The values of amends_circuit_state.
const (
	circuitClosed   = 0
	circuitHalfOpen = 1
	circuitOpen     = 2
)

// Circuits reports, read from the circuits at each scrape (package
// circuit), for each function ("Processor.Name", as the other metrics by
// function) whose circuit was ever written:
//
//   - amends_circuit_state{function}: 0 closed, 1 half-open, 2 open (of
//     functions of the same name in several contexts, the most open);
//   - amends_circuit_transitions_total{function,to}: the transitions into
//     each state (open, half_open, closed);
//   - amends_circuit_refused_total{function}: the calls the circuit
//     refused, whose events were recorded at once with errorCode
//     CircuitOpen.
//
// Functions past MaxFunctions are reported together, as for the other
// metrics by function.
func Circuits(src CircuitSource) prometheus.Collector {
	state := desc("circuit_state", "The function's circuit: 0 closed, 1 half-open, 2 open.", "function")
	transitions := desc("circuit_transitions_total", "Transitions of the function's circuit into each state.", "function", "to")
	refused := desc("circuit_refused_total", "Calls the function's circuit refused (recorded at once with errorCode CircuitOpen).", "function")
	return &collector{descs: []*prometheus.Desc{state, transitions, refused}, read: func() []sample {
		states, opened, halfOpened, closed, ref := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
		for _, st := range src.List() {
			k := st.Function.Label()
			v := float64(circuitClosed)
			switch st.Phase {
			case circuit.Open:
				v = circuitOpen
			case circuit.HalfOpen:
				v = circuitHalfOpen
			}
			states[k] = max(states[k], v)
			opened[k] += float64(st.Counts.Opened)
			halfOpened[k] += float64(st.Counts.HalfOpened)
			closed[k] += float64(st.Counts.Closed)
			ref[k] += float64(st.RefusedTotal)
		}
		var out []sample
		for k, v := range capped(states, maxOf) {
			out = append(out, gauge(state, v, k))
		}
		for to, m := range map[string]map[string]float64{"open": opened, "half_open": halfOpened, "closed": closed} {
			for k, v := range capped(m, sumOf) {
				out = append(out, sample{desc: transitions, kind: prometheus.CounterValue, value: v, labels: []string{k, to}})
			}
		}
		for k, v := range capped(ref, sumOf) {
			out = append(out, sample{desc: refused, kind: prometheus.CounterValue, value: v, labels: []string{k}})
		}
		return out
	}}
}
