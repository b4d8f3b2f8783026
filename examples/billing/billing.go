// Package billing is a minimal service built on amends: invoices are
// issued as events, an emailer mails each one (and its mail server fails
// now and then) and a ledger posts it. When the emailer still fails after
// its immediate retries, amends records the failure and later replays the
// invoice to the emailer alone; the ledger does not run again.
//
// The README's section "Embedding amends in a service" is this file's
// wiring, and TestReadmeIsTheExample keeps the two identical.
package billing

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends"
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// Invoice is the body of the invoice_issued event.
type Invoice struct {
	Email string `json:"email"`
	Cents int64  `json:"cents"`
}

// Mailer sends one mail; key (the event id) lets it drop a mail it sent
// before, so replays and redeliveries do not mail twice.
type Mailer interface {
	Send(ctx context.Context, key, to, subject string) error
}

// ErrGreylisted is a mail server's temporary refusal: try again later.
var ErrGreylisted = errors.New("451 greylisted, try again later")

// --- wiring (README: "Embedding amends in a service") ---

// Records of greylisted mails get the errorCode Greylisted, not Unclassified.
var _ = recorder.RegisterCode(ErrGreylisted, "Greylisted")

// New wires the billing service on js: the emailer and the ledger react to
// invoice_issued. Start it, Append invoices, Stop it.
func New(js jetstream.JetStream, mail Mailer, ledger *Ledger, opts ...amends.Option) (*amends.Service, error) {
	svc, err := amends.New(js, "billing", opts...)
	if err != nil {
		return nil, err
	}
	onIssued := func(processorName, name string) processor.Function {
		return processor.Function{Processor: processorName, Name: name,
			AggregateTypes: []string{"invoice"}, Events: []string{"invoice_issued"}}
	}
	sendInvoice := func(ctx context.Context, d *processor.Delivery, inv Invoice) error {
		err := mail.Send(ctx, d.Event.ID, inv.Email, "Your invoice")
		if errors.Is(err, ErrGreylisted) {
			return failure.Recoverable(err) // retried at once, then replayed
		}
		return err
	}
	return svc, errors.Join(
		svc.Register(onIssued("Emailer", "sendInvoice"), processor.HandleBody(sendInvoice),
			processor.RetrySpec(aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30})),
		svc.Register(onIssued("Ledger", "post"), processor.HandleBody(ledger.Post)))
}

// Issue appends an invoice_issued event to a new invoice.
func Issue(ctx context.Context, svc *amends.Service, id string, inv Invoice) (eventstore.Stream, error) {
	return svc.Append(ctx, "invoice", id, 0, eventstore.NewEvent{Name: "invoice_issued", Body: inv})
}

// --- end of wiring ---
