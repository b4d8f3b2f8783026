// Package amends wires the usual amends chain for one bounded context in
// one call: the JetStream event store (jsstore), the service that runs
// commands on ExecutionFailed records (aggregate.Service), the recorder
// that records final failures on them (recorder) and the processor that
// runs your functions, retries them, records what still fails and replays
// prepared compensations (processor).
//
//	svc, err := amends.New(js, "billing")
//	if err != nil {
//		return err // only an invalid context or option; New does no I/O
//	}
//	err = svc.Register(processor.Function{Processor: "Mailer", Name: "sendInvoice",
//		AggregateTypes: []string{"invoice"}, Events: []string{"invoice_issued"}},
//		processor.HandleBody(sendInvoice))
//	...
//	ctx, stop := context.WithCancel(ctx) // stop() stops the service
//	if err := svc.Start(ctx); err != nil { // provisions, returns once ready
//		stop()
//		return err
//	}
//	defer func() { stop(); _ = svc.Wait() }()
//	_, err = svc.Append(ctx, "invoice", "inv-1", 0, eventstore.NewEvent{Name: "invoice_issued", Body: inv})
//
// The parts stay public: a Service's fields are the store, the record
// service and the recorder it built, and a service that needs another
// arrangement (several contexts on one store, its own FailureRecorder)
// builds them with jsstore.New, aggregate.NewService, recorder.New and
// processor.New, as this package does.
//
// The operators' side, the projection, the scheduler that prepares due
// records and the HTTP API, is `amends serve`; a service connects to the
// same NATS server (serve's --nats-listen address).
package amends
