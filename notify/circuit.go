package notify

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/quarantine"
)

// The circuit notification event types: a function's circuit opened
// (from CLOSED, by its failures, an operator or a failed drain), its
// half-open probe failed and it opened again, or it closed.
const (
	TypeCircuitOpened      = "circuit_opened"
	TypeCircuitProbeFailed = "circuit_probe_failed"
	TypeCircuitClosed      = "circuit_closed"
)

// The circuits bucket (circuit.DefaultBucket) as a stream: transitions are
// read from it with a durable consumer, so none is missed while the
// notifier is down. Each transition is written in a revision of its own,
// which keeps it as its last transition.
const (
	circuitSubject = "$KV." + circuit.DefaultBucket + "."
)

// CircuitNote is what a circuit notification says: the function
// (CONTEXT.PROCESSOR.NAME), the transition with the numbers that caused it
// and who made it, and the last real failure. Times are epoch ms.
type CircuitNote struct {
	Function   string `json:"function"`
	From       string `json:"from"`
	To         string `json:"to"`
	Cause      string `json:"cause"`
	Seq        int64  `json:"seq"`
	Failures   int    `json:"failures,omitempty"`
	Calls      int    `json:"calls,omitempty"`
	CoolDownMs int64  `json:"coolDownMs,omitempty"`
	Refused    int64  `json:"refused"`
	Actor      string `json:"actor,omitempty"`
	Reason     string `json:"reason,omitempty"`
	ErrorCode  string `json:"errorCode,omitempty"`
	ErrorMsg   string `json:"errorMsg,omitempty"`
	// OpenSince is when the incident began (an open's first failure).
	OpenSince int64 `json:"openSince,omitempty"`

	fn aggregate.FunctionInfo
}

func (n *Notifier) circuitConsumer() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       n.opts.durable + "-circuits",
		Description:   "amends: delivers notifications of circuit transitions",
		FilterSubject: circuitSubject + ">",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       n.opts.ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	}
}

// routesCircuits reports whether a rule may route a circuit notification
// (any function's): one of no event types, or of a circuit's.
func (n *Notifier) routesCircuits() bool {
	for _, r := range n.cfg.Rules {
		if len(r.Events) == 0 || slices.ContainsFunc(r.Events, func(e string) bool {
			return e == TypeCircuitOpened || e == TypeCircuitProbeFailed || e == TypeCircuitClosed
		}) {
			return true
		}
	}
	return false
}

// consumeCircuits makes sure the circuits bucket exists, then consumes its
// stream.
func (n *Notifier) consumeCircuits(ctx context.Context) error {
	st, err := circuit.OpenStore(ctx, n.js, circuit.WithReplicas(n.opts.replicas), circuit.WithStorage(n.opts.storage))
	if err != nil {
		return err
	}
	return n.consume(ctx, st.Stream(), n.circuitConsumer(), func(ctx context.Context, m jetstream.Msg) { n.handleCircuit(ctx, st, m) })
}

// circuitNote returns the notification of a circuit revision, or false if
// the revision made no transition worth one (a count of refused calls, a
// claimed probe, a deletion). Pure but for the decoder's clock.
func circuitNote(store *circuit.Store, subject string, data []byte, op string) (*Notification, bool, error) {
	key := strings.TrimPrefix(subject, circuitSubject)
	if op != "" {
		return nil, false, nil
	}
	st, err := store.Decode(key, data)
	if err != nil {
		return nil, false, err
	}
	t, ok := st.LastTransition()
	if !ok || t.At != st.UpdatedAt || t.Seq != st.Counts.Total() {
		return nil, false, nil // this revision did not make its last transition
	}
	var typ string
	switch {
	case t.To == circuit.Closed:
		typ = TypeCircuitClosed
	case t.To == circuit.Open && t.Cause == circuit.CauseProbeFailed:
		typ = TypeCircuitProbeFailed
	case t.To == circuit.Open && t.From != circuit.Open:
		typ = TypeCircuitOpened
	case t.To == circuit.Open && t.Cause == circuit.CauseOperator:
		typ = TypeCircuitOpened // an operator forced an open circuit to stay open
	default:
		return nil, false, nil
	}
	f := st.Function
	note := &CircuitNote{Function: f.String(), From: string(t.From), To: string(t.To), Cause: string(t.Cause), Seq: t.Seq,
		Failures: t.Failures, Calls: t.Calls, CoolDownMs: t.CoolDownMs, Refused: st.Refused, Actor: t.Actor, Reason: t.Reason,
		OpenSince: st.Incident.From,
		fn:        aggregate.FunctionInfo{ContextName: f.Context, ProcessorName: f.Processor, Name: f.Name}}
	if st.Last != nil {
		note.ErrorCode, note.ErrorMsg = st.Last.Code, clip(st.Last.Message, maxErrorMsg)
	}
	return &Notification{
		ID:   uuid.NewSHA1(namespace, []byte("circuit\x00"+f.String()+"\x00"+strconv.FormatInt(t.Seq, 10)+"\x00"+strconv.FormatInt(t.At, 10))).String(),
		Type: typ, Time: t.At, Circuit: note,
		Version: uint64(max(t.Seq, 1)),
	}, true, nil
}

// handleCircuit delivers the notification of a circuit revision; ack
// semantics as handleRecord's.
func (n *Notifier) handleCircuit(ctx context.Context, store *circuit.Store, m jetstream.Msg) {
	consumer := n.opts.durable + "-circuits"
	if len(m.Data()) > circuit.MaxValue {
		n.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable, fmt.Errorf("the circuit is %d bytes, over the limit of %d", len(m.Data()), circuit.MaxValue))
		return
	}
	note, ok, err := circuitNote(store, m.Subject(), m.Data(), m.Headers().Get("KV-Operation"))
	n.settleNote(ctx, m, consumer, note, ok, err)
}

// circuitTitle is a circuit notification's headline.
func circuitTitle(n *Notification) string {
	c := n.Circuit
	switch n.Type {
	case TypeCircuitOpened:
		return fmt.Sprintf("Circuit opened: %s", c.Function)
	case TypeCircuitProbeFailed:
		return fmt.Sprintf("Circuit probe failed: %s", c.Function)
	}
	return fmt.Sprintf("Circuit closed: %s", c.Function)
}

// circuitDetail says what caused it.
func circuitDetail(c *CircuitNote) string {
	var s string
	switch circuit.Cause(c.Cause) {
	case circuit.CauseConsecutive:
		s = fmt.Sprintf("%d calls in a row failed", c.Failures)
	case circuit.CauseRatio:
		s = fmt.Sprintf("%d of %d calls failed", c.Failures, c.Calls)
	case circuit.CauseProbeFailed:
		s = "the probe failed"
	case circuit.CauseProbesSucceeded:
		s = fmt.Sprintf("%d probes succeeded; %d calls were refused while it was open", c.Calls, c.Refused)
	case circuit.CauseOperator:
		s = fmt.Sprintf("by %s: %s", c.Actor, c.Reason)
	case circuit.CauseDrain:
		s = c.Reason
	default:
		s = c.Cause
	}
	if c.To == string(circuit.Open) && c.CoolDownMs > 0 {
		s += fmt.Sprintf("; next probe in %s", time.Duration(c.CoolDownMs)*time.Millisecond)
	}
	if c.ErrorCode != "" && c.To == string(circuit.Open) {
		s += fmt.Sprintf("; last failure %s: %s", c.ErrorCode, c.ErrorMsg)
	}
	return s
}
