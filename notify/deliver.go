package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// maxResponse bounds what is read of an endpoint's answer.
const maxResponse = 4 << 10

// handleRecord delivers the notifications of one record stream.
//
// Ack semantics: every routed notification delivered, dropped by dedup or
// recorded as a failure → Ack. A record of the notifier's own function, or
// a message that is not a record → Ack without notifying. A message that
// does not decode → quarantined and Term. A transient error (a bucket or
// the store unavailable, recording a failure failed) → Nak with a growing
// delay, quarantined once the deliveries are exhausted.
func (n *Notifier) handleRecord(ctx context.Context, m jetstream.Msg) {
	st, err := n.store.DecodeMsg(m)
	if err != nil {
		n.quarantine(ctx, m, n.opts.durable, quarantine.ReasonUndecodable, err)
		return
	}
	if st.Aggregate.Context != aggregate.Context || st.Aggregate.Type != aggregate.AggregateType {
		_ = m.Ack()
		return
	}
	state, ok := aggregate.CarriedState(st)
	if !ok {
		n.quarantine(ctx, m, n.opts.durable, quarantine.ReasonCorrupt, errors.New("the stream carries no record state"))
		return
	}
	if state.Function.ProcessorName == ProcessorName {
		_ = m.Ack() // the notifier's own failures: never notified, so no loop
		return
	}
	for _, note := range fromStream(&st, &state) {
		if err := n.notify(ctx, &st, &note); err != nil {
			n.later(ctx, m, n.opts.durable, err)
			return
		}
	}
	_ = m.Ack()
}

// notify counts note for digests and delivers it to every endpoint its
// rules route it to. A delivery that fails after the retry limit is
// recorded; the error returned is one that makes the message redelivered.
func (n *Notifier) notify(ctx context.Context, st *eventstore.Stream, note *Notification) error {
	if n.digestKV() != nil {
		if err := countDigest(ctx, n.digestKV(), note); err != nil {
			return fmt.Errorf("count for the digest: %w", err)
		}
	}
	for _, name := range n.cfg.routes(note) {
		ep, _ := n.cfg.Endpoint(name)
		err := n.deliver(ctx, ep, note)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || errors.Is(err, errTransient) {
			return err
		}
		if err := n.recordFailure(ctx, st, note, ep, err); err != nil {
			return fmt.Errorf("record the failed delivery to %s: %w", ep.Name, err)
		}
	}
	return nil
}

var errTransient = errors.New("transient")

func (n *Notifier) dedupKV() *kvstore.Store[claim] {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dedup
}

func (n *Notifier) digestKV() *kvstore.Store[digestEntry] {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.digest
}

// deliver sends note to ep once per dedup key and window, retrying with
// capped, jittered backoff. It returns nil once delivered (or dropped as a
// duplicate), an error wrapping errTransient if the dedup bucket failed,
// or the last delivery error after the retry limit or a refusal.
func (n *Notifier) deliver(ctx context.Context, ep *Endpoint, note *Notification) error {
	window := n.cfg.DedupWindow.Duration
	v, rev, at, err := claimKey(ctx, n.dedupKV(), ep.Name, note, window, n.opts.clock.Now())
	if err != nil {
		return fmt.Errorf("dedup: %w: %w", err, errTransient)
	}
	switch v {
	case duplicate:
		n.metrics.dropped.WithLabelValues(ep.Name).Inc()
		return nil
	case delivered:
		return nil
	}
	body, err := encodeBody(note, ep.Format, n.cfg.PublicURL)
	if err != nil {
		return err
	}
	release := func() {
		if err := releaseKey(ctx, n.dedupKV(), ep.Name, note, window, rev); err != nil {
			n.opts.logger.Debug("notifier: release the dedup key", "endpoint", ep.Name, "err", err)
		}
	}
	for attempt := 1; ; attempt++ {
		_, err = n.post(ctx, ep, note, body)
		if err == nil {
			n.metrics.deliveries.WithLabelValues(ep.Name, OutcomeDelivered).Inc()
			if note.Time > 0 {
				n.metrics.lag.Observe(max(0, time.Since(time.UnixMilli(note.Time)).Seconds()))
			}
			if err := markDelivered(ctx, n.dedupKV(), ep.Name, note, window, rev, at); err != nil {
				n.opts.logger.Debug("notifier: mark delivered", "endpoint", ep.Name, "err", err)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrRefused) {
			n.metrics.deliveries.WithLabelValues(ep.Name, OutcomeRefused).Inc()
			n.opts.logger.Warn("notifier: destination refused", "endpoint", ep.Name, "err", err)
			release()
			return err
		}
		if attempt >= n.cfg.Retry.Attempts {
			n.metrics.deliveries.WithLabelValues(ep.Name, OutcomeFailed).Inc()
			n.opts.logger.Warn("notifier: delivery failed after the retry limit", "endpoint", ep.Name, "attempts", attempt, "err", err)
			release()
			return err
		}
		n.metrics.retries.WithLabelValues(ep.Name).Inc()
		n.opts.logger.Debug("notifier: delivery failed; retrying", "endpoint", ep.Name, "attempt", attempt, "err", err)
		if wait.Sleep(ctx, n.cfg.Retry.delay(attempt, nil)) != nil {
			return ctx.Err()
		}
	}
}

// Response is an endpoint's answer to one request.
type Response struct {
	Status int
	// Body is the start of the answer's body (at most 4 KiB).
	Body []byte
}

// post sends one signed request. Its error names the endpoint, never its
// URL's query or a secret; it wraps ErrRefused or ErrDelivery.
func (n *Notifier) post(ctx context.Context, ep *Endpoint, note *Notification, body []byte) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return Response{}, fmt.Errorf("endpoint %s: the URL does not make a request: %w", ep.Name, ErrDelivery)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "amends-notify")
	req.Header.Set(HeaderEventType, note.Type)
	if s := note.Record; s != nil {
		req.Header.Set(HeaderRecordID, s.ID)
		a := s.EventID.AggregateID
		req.Header.Set(HeaderAggregateType, a.ContextName+"."+a.AggregateName)
		req.Header.Set(HeaderAggregateID, a.AggregateID)
	}
	if note.TraceID != "" {
		req.Header.Set(HeaderTraceID, note.TraceID)
	}
	signRequest(req, body, note.ID, ep.secrets, n.opts.clock.Now())
	start := time.Now()
	resp, err := n.clients[ep.Name].Do(req)
	n.metrics.latency.WithLabelValues(ep.Name).Observe(time.Since(start).Seconds())
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the URL
		}
		if errors.Is(err, ErrRefused) {
			return Response{}, fmt.Errorf("endpoint %s: %w", ep.Name, err)
		}
		return Response{}, fmt.Errorf("endpoint %s: %v: %w", ep.Name, err, ErrDelivery)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	r := Response{Status: resp.StatusCode, Body: data}
	if !ep.succeeded(resp.StatusCode) {
		return r, fmt.Errorf("endpoint %s answered %d, outside its success range %d to %d: %w", ep.Name, resp.StatusCode, ep.SuccessStatus[0], ep.SuccessStatus[1], ErrDelivery)
	}
	return r, nil
}

// FunctionFor returns the notifier's own function for endpoint: the
// function of the records of failed deliveries.
func FunctionFor(endpoint string) aggregate.FunctionInfo {
	return aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: aggregate.Context, ProcessorName: ProcessorName, Name: "deliver-" + endpoint}
}

// Error codes of the notifier's records.
const (
	CodeDeliveryFailed = "NotificationFailed"
	CodeRefused        = "NotificationRefused"
)

// recordFailure records a delivery that failed for good as an
// ExecutionFailed record of the notifier's function for ep: its event id
// is the notification's, its aggregate and version the record stream's.
// It is UNRECOVERABLE (the scheduler does not replay it); the record stays
// for an operator to see. Recording twice is idempotent.
func (n *Notifier) recordFailure(ctx context.Context, st *eventstore.Stream, note *Notification, ep *Endpoint, cause error) error {
	if n.rec == nil {
		return nil
	}
	code := CodeDeliveryFailed
	if errors.Is(cause, ErrRefused) {
		code = CodeRefused
	}
	fn := FunctionFor(ep.Name)
	// A batch or digest has no record stream: its aggregate is the
	// notification itself.
	ev := aggregate.EventID{ID: note.ID, Version: max(note.Version, 1),
		AggregateID: aggregate.WireAggregateID{ContextName: aggregate.Context, AggregateName: "notification", AggregateID: note.ID, TenantID: aggregate.DefaultTenantID}}
	if st != nil {
		ev.AggregateID, ev.Seq = aggregate.WireAggregateIDOf(st.Aggregate), st.Seq
	}
	id := aggregate.RecordID(ev.ID, fn)
	msg := fmt.Sprintf("%s notification %s to endpoint %s: %v", note.Type, note.ID, ep.Name, cause)
	cmd := aggregate.CreateExecutionFailed{
		EventID: ev, Function: fn, ExecuteAt: n.opts.clock.Now().UnixMilli(),
		Error:       aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: clip(msg, maxErrorMsg)},
		Recoverable: aggregate.Unrecoverable,
	}
	meta := aggregate.Meta{
		CommandID: uuid.NewSHA1(namespace, []byte("record\x00"+note.ID+"\x00"+ep.Name)).String(),
		Actor:     ProcessorName, Reason: "notification delivery failed after the retry limit",
	}
	if note.TraceID != "" {
		meta.TraceID = note.TraceID
	}
	_, err := n.rec.Execute(ctx, id, cmd, meta)
	var ae *aggregate.Error
	if errors.As(err, &ae) {
		err = nil // already recorded: a rejection of a second create
	}
	if err != nil {
		return err
	}
	n.metrics.recorded.Inc()
	return nil
}

// Send sends a signed test notification to the endpoint named name, once,
// without dedup or retries, and returns its answer. Errors wrap ErrRefused
// or ErrDelivery; they never contain a secret. Safe for concurrent use.
func (n *Notifier) Send(ctx context.Context, name string) (Notification, Response, error) {
	ep, ok := n.cfg.Endpoint(name)
	if !ok {
		return Notification{}, Response{}, fmt.Errorf("no endpoint is named %q: %w", name, ErrInvalidConfig)
	}
	now := n.opts.clock.Now()
	note := Notification{ID: uuid.NewString(), Type: TypeTest, Time: now.UnixMilli()}
	body, err := encodeBody(&note, ep.Format, n.cfg.PublicURL)
	if err != nil {
		return note, Response{}, err
	}
	r, err := n.post(ctx, ep, &note, body)
	return note, r, err
}

var _ Recorder = (*aggregate.Service)(nil)
