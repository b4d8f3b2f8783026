package orders

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

// MailServer sends one mail. key identifies the mail (the event id), so a
// server that saw it before does not send it twice.
type MailServer interface {
	Send(ctx context.Context, key, to, subject string) error
}

// ErrMailboxFull is a mail server's permanent rejection.
var ErrMailboxFull = errors.New("550 mailbox full")

// ErrGreylisted is a mail server's temporary rejection: try later.
var ErrGreylisted = errors.New("451 greylisted, try again later")

// Mailer mails the customer when an order is placed.
type Mailer struct {
	server MailServer
	spec   aggregate.RetrySpec
}

// MailRetrySpec is the mailer's default retry spec: 5 scheduled retries,
// from 60 s, each replay allowed 30 s.
var MailRetrySpec = aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30}

// NewMailer returns the mailer sending through server, whose failures are
// retried by spec.
func NewMailer(server MailServer, spec aggregate.RetrySpec) *Mailer {
	return &Mailer{server: server, spec: spec}
}

// Register adds the mailer's function to p: a full mailbox is
// unrecoverable for this function (its records are left to operators);
// failed mails are scheduled by the mailer's retry spec.
func (m *Mailer) Register(p *processor.Processor) error {
	return p.Register(processor.Function{Processor: "Mailer", Name: "confirmOrder",
		AggregateTypes: []string{AggregateType}, Events: []string{EventPlaced}},
		processor.HandleBody(m.confirm),
		processor.RetrySpec(m.spec),
		processor.UnrecoverableOn(failure.Is(ErrMailboxFull)))
}

// confirm mails the order confirmation. The event id is the mail's key, so
// a redelivery or a replay after a lost reply does not mail twice. A
// temporary rejection is marked recoverable, so the processor retries it at
// once and the scheduler later.
func (m *Mailer) confirm(ctx context.Context, d *processor.Delivery, p Placed) error {
	subject := fmt.Sprintf("Order %s confirmed: %d lines", d.Stream.Aggregate.ID, len(p.Lines))
	err := m.server.Send(ctx, d.Event.ID, p.Email, subject)
	if errors.Is(err, ErrGreylisted) {
		return failure.Recoverable(err)
	}
	return err
}

// FlakyServer is an in-memory mail server that fails while told to. It
// remembers sent keys, so sending twice is harmless. Safe for concurrent
// use.
type FlakyServer struct {
	mu       sync.Mutex
	fail     error
	failEach int            // fail each key's first failEach sends
	tried    map[string]int // sends per key
	sent     map[string]string
	tries    int
}

// NewFlakyServer returns a working server.
func NewFlakyServer() *FlakyServer {
	return &FlakyServer{sent: make(map[string]string), tried: make(map[string]int)}
}

// FailFirst makes the first n sends of every mail fail with err, then work.
func (s *FlakyServer) FailFirst(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failEach, s.fail = n, err
}

// FailWith makes every send fail with err (nil: work again).
func (s *FlakyServer) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.failEach = err, 0
}

// Send implements MailServer.
func (s *FlakyServer) Send(_ context.Context, key, to, subject string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	s.tried[key]++
	if s.fail != nil && (s.failEach == 0 || s.tried[key] <= s.failEach) {
		return fmt.Errorf("send to %s: %w", to, s.fail)
	}
	s.sent[key] = to + ": " + subject
	return nil
}

// Sent returns the mails sent, by key.
func (s *FlakyServer) Sent() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.sent))
	for k, v := range s.sent {
		out[k] = v
	}
	return out
}

// Tries counts send attempts.
func (s *FlakyServer) Tries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries
}
