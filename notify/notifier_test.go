package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/internal/testwait"
	"github.com/amends-dev/amends/quarantine"
)

const waitLimit = 30 * time.Second

// received is one request a test receiver got.
type received struct {
	path   string
	header http.Header
	body   Body
	slack  map[string]any
	raw    []byte
	sigOK  bool
}

// receiver is a local webhook receiver that checks each signature with
// the independent implementation and answers status.
type receiver struct {
	srv    *httptest.Server
	secret string
	mu     sync.Mutex
	got    []received
	status int
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{secret: secret, status: 200}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		want := independentSign(secret, req.Method, req.URL.EscapedPath(), req.URL.RawQuery, req.Header.Get(HeaderTimestamp), req.Header.Get(HeaderEventID), raw)
		sigs := req.Header.Get(HeaderSignature)
		rec := received{path: req.URL.Path, header: req.Header.Clone(), raw: raw, sigOK: sigs == want || len(sigs) > len(want) && (sigs[:len(want)] == want || sigs[len(sigs)-len(want):] == want)}
		_ = json.Unmarshal(raw, &rec.body)
		_ = json.Unmarshal(raw, &rec.slack)
		r.mu.Lock()
		r.got = append(r.got, rec)
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setStatus(s int) {
	r.mu.Lock()
	r.status = s
	r.mu.Unlock()
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func (r *receiver) ofType(typ string) []received {
	var out []received
	for _, g := range r.requests() {
		if g.header.Get(HeaderEventType) == typ {
			out = append(out, g)
		}
	}
	return out
}

// url is the receiver's URL under the allow-listed name receiver.test.
func (r *receiver) url(path string) string {
	return "http://receiver.test:" + portOf(r.srv) + path
}

type env struct {
	srv   *natstest.Server
	js    jetstream.JetStream
	store *jsstore.Store
	svc   *aggregate.Service
	clock *fakeclock.Clock
	quar  *quarantine.Quarantine
}

var t0 = time.UnixMilli(1_760_000_000_000)

func newEnv(t *testing.T) *env { return newBenchEnv(t) }

func newBenchEnv(t testing.TB) *env {
	t.Helper()
	e := &env{srv: natstest.New(t), clock: fakeclock.At(t0.UnixMilli())}
	e.js = e.srv.JetStream()
	var err error
	e.store, err = jsstore.New(e.js)
	require.NoError(t, err)
	require.NoError(t, e.store.Provision(t.Context(), aggregate.Context))
	e.svc = aggregate.NewService(e.store, aggregate.WithClock(e.clock))
	e.quar, err = quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	return e
}

var testResolver = &fakeResolver{hosts: map[string][]string{"receiver.test": {"127.0.0.1"}, "private.test": {"10.0.0.9"}}}

// settled waits until the notifier's durable on the compensation stream
// has acknowledged every message it was given.
func (e *env) settled(t *testing.T, durable string) {
	t.Helper()
	testwait.For(t, "the notifier acknowledged every message", func() bool {
		c, err := e.js.Consumer(t.Context(), e.store.StreamName(aggregate.Context), durable)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Stream > 0
	})
}

func (e *env) config(t *testing.T, js string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(js), func(k string) (string, bool) {
		v, ok := map[string]string{"SECRET": goodSecret, "OTHER": "other-secret-0123456789"}[k]
		return v, ok
	})
	require.NoError(t, err)
	return c
}

// start runs a notifier on cfg until the test ends (or stop is called)
// and waits for its consumer.
func (e *env) start(t *testing.T, cfg *Config) (*Notifier, func()) {
	t.Helper()
	n, err := New(e.js, e.store, e.svc, cfg, WithResolver(testResolver), WithClock(e.clock), WithQuarantine(e.quar), WithDigestTick(time.Hour))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	require.Eventually(t, func() bool {
		_, err := e.js.Consumer(t.Context(), e.store.StreamName(aggregate.Context), DefaultDurable)
		return err == nil
	}, waitLimit, 5*time.Millisecond, "the notifier's consumer never appeared")
	return n, stop
}

func fn(processor, name string) aggregate.FunctionInfo {
	return aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "orders", ProcessorName: processor, Name: name}
}

// create records a failure of f on event eventID and returns the record id.
func (e *env) create(t *testing.T, eventID string, f aggregate.FunctionInfo, code string) string {
	t.Helper()
	id := aggregate.RecordID(eventID, f)
	_, err := e.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: eventID, AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: "o-" + eventID, TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function: f, Error: aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "it broke"}, ExecuteAt: e.clock.Now().UnixMilli(),
	}, aggregate.Meta{TraceID: "trace-" + eventID})
	require.NoError(t, err)
	return id
}

// failAgain prepares id and reports that the replay failed with code.
func (e *env) failAgain(t *testing.T, id, code string) {
	t.Helper()
	_, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	_, err = e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionFailed{Error: aggregate.ErrorDetails{ErrorCode: code, ErrorMsg: "again"}, ExecuteAt: e.clock.Now().UnixMilli()}, aggregate.Meta{})
	require.NoError(t, err)
}

func (e *env) succeed(t *testing.T, id string) {
	t.Helper()
	_, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	_, err = e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: e.clock.Now().UnixMilli()}, aggregate.Meta{})
	require.NoError(t, err)
}

func TestNotifierDeliversSignedNotifications(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	chat := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"publicUrl": "https://amends.example.com", "allowHosts": ["receiver.test"],
		"endpoints": [{"name": "ops", "url": "`+rcv.url("/hooks/amends?team=ops")+`", "secrets": [{"env": "OTHER"}, {"env": "SECRET"}]},
			{"name": "chat", "url": "`+chat.url("/slack")+`", "format": "slack", "secrets": [{"env": "SECRET"}]}],
		"defaultEndpoint": "ops",
		"rules": [{"events": ["created", "retries_exhausted"]}, {"events": ["created"], "endpoint": "chat"}]}`)
	n, _ := e.start(t, cfg)

	id := e.create(t, "evt-1", fn("shipping", "ship"), "Timeout")
	testwait.For(t, "the created notification reaches both endpoints", func() bool {
		return len(rcv.ofType(TypeCreated)) == 1 && len(chat.ofType(TypeCreated)) == 1
	})
	got := rcv.ofType(TypeCreated)[0]
	assert.True(t, got.sigOK, "the independent implementation verifies the signature byte for byte: %s", got.header.Get(HeaderSignature))
	assert.Len(t, splitSigs(got.header.Get(HeaderSignature)), 2, "both active secrets sign")
	assert.NoError(t, Verify("POST", "/hooks/amends", "team=ops", got.header, got.raw, [][]byte{[]byte(goodSecret)}, e.clock.Now(), 0))
	assert.Equal(t, id, got.header.Get(HeaderRecordID))
	assert.Equal(t, "orders.order", got.header.Get(HeaderAggregateType))
	assert.Equal(t, "o-evt-1", got.header.Get(HeaderAggregateID))
	assert.Equal(t, "trace-evt-1", got.header.Get(HeaderTraceID))
	assert.Equal(t, got.body.ID, got.header.Get(HeaderEventID))
	assert.Equal(t, "https://amends.example.com/record?id="+id, got.body.Link, "the body links to the dashboard's record page")
	require.NotNil(t, got.body.Record)
	assert.Equal(t, "Timeout", got.body.Record.ErrorCode)
	assert.Equal(t, "ship", got.body.Record.Function.Name)

	s := chat.ofType(TypeCreated)[0]
	assert.True(t, s.sigOK)
	assert.Contains(t, s.slack["text"], "Failure recorded: shipping/ship")
	assert.NotEmpty(t, s.slack["blocks"], "a Slack body has blocks")
	assert.Contains(t, string(s.raw), "https://amends.example.com/record?id="+id)

	// A record whose function may not be retried is exhausted at once.
	idu := aggregate.RecordID("evt-2", fn("shipping", "ship"))
	_, err := e.svc.Execute(t.Context(), idu, aggregate.CreateExecutionFailed{
		EventID: aggregate.EventID{ID: "evt-2", AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: "o-2", TenantID: aggregate.DefaultTenantID}, Version: 1}, Function: fn("shipping", "ship"),
		Error: aggregate.ErrorDetails{ErrorCode: "Invalid"}, ExecuteAt: e.clock.Now().UnixMilli(), Recoverable: aggregate.Unrecoverable,
	}, aggregate.Meta{})
	require.NoError(t, err)
	testwait.For(t, "retries_exhausted is derived", func() bool { return len(rcv.ofType(TypeRetriesExhausted)) == 1 })
	assert.Equal(t, idu, rcv.ofType(TypeRetriesExhausted)[0].header.Get(HeaderRecordID))
	assert.Empty(t, chat.ofType(TypeRetriesExhausted), "rules select by event type")
	// The receiver has a request before the notifier has its answer and
	// counts the delivery.
	testwait.For(t, "deliveries are counted by endpoint and outcome: two created, one exhausted", func() bool {
		return testutil.ToFloat64(n.metrics.deliveries.WithLabelValues("ops", OutcomeDelivered)) == 3
	})
}

// A command appended in a trace (the recorder's, in the failed call's span)
// carries its traceparent, not a TraceID field: the notification names
// that trace (issue 30, item 19).
func TestCreatedNotificationNamesTheTraceOfItsCommand(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "endpoints": [{"name": "ops", "url": "`+rcv.url("/h")+`", "secrets": [{"env": "SECRET"}]}],
		"defaultEndpoint": "ops", "rules": [{"events": ["created"]}]}`)
	e.start(t, cfg)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	f := fn("shipping", "ship")
	id := aggregate.RecordID("evt-t", f)
	_, err := e.svc.Execute(ctx, id, aggregate.CreateExecutionFailed{
		EventID:  aggregate.EventID{ID: "evt-t", AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: "o-t", TenantID: aggregate.DefaultTenantID}, Version: 1},
		Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "it broke"}, ExecuteAt: e.clock.Now().UnixMilli(),
	}, aggregate.Meta{})
	require.NoError(t, err)
	testwait.For(t, "the created notification", func() bool { return len(rcv.ofType(TypeCreated)) == 1 })
	got := rcv.ofType(TypeCreated)[0]
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", got.header.Get(HeaderTraceID))
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", got.body.TraceID)
}

func splitSigs(s string) []string {
	return jsonSplit(s)
}

func jsonSplit(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func TestNotifierDeduplicatesWithinTheWindow(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "dedupWindow": "10m",
		"endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}],
		"rules": [{"events": ["applied", "created"]}]}`)
	n, _ := e.start(t, cfg)

	id := e.create(t, "evt-1", fn("billing", "charge"), "Boom")
	e.failAgain(t, id, "Boom")
	e.failAgain(t, id, "Boom") // the same key within the window
	e.failAgain(t, id, "Other")
	e.create(t, "evt-2", fn("billing", "charge"), "Boom") // another record: another key
	testwait.For(t, "one notification per key", func() bool {
		return len(rcv.ofType(TypeCreated)) == 2 && len(rcv.ofType(TypeApplied)) == 2 &&
			testutil.ToFloat64(n.metrics.dropped.WithLabelValues("ops")) == 1
	})

	e.clock.Set(t0.Add(11 * time.Minute)) // past the window
	e.failAgain(t, id, "Boom")
	testwait.For(t, "after the window the key notifies again", func() bool { return len(rcv.ofType(TypeApplied)) == 3 })
	assert.Equal(t, 1.0, testutil.ToFloat64(n.metrics.dropped.WithLabelValues("ops")))
}

func TestNotifierRecordsFailedDeliveriesAndNeverNotifiesThem(t *testing.T) {
	e := newEnv(t)
	down := newReceiver(t, goodSecret)
	down.setStatus(503)
	all := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "retry": {"attempts": 3, "first": "10ms", "max": "20ms"},
		"endpoints": [{"name": "down", "url": "`+down.url("/")+`", "secrets": [{"env": "SECRET"}]},
			{"name": "all", "url": "`+all.url("/")+`", "secrets": [{"env": "SECRET"}]},
			{"name": "private", "url": "http://private.test/", "secrets": [{"env": "SECRET"}]}],
		"rules": [{"events": ["created"], "processor": "billing", "endpoint": "down"},
			{"events": ["created"], "processor": "billing", "endpoint": "private"},
			{"events": ["created", "retries_exhausted"], "endpoint": "all"}]}`)
	n, _ := e.start(t, cfg)

	e.create(t, "evt-1", fn("billing", "charge"), "Boom")
	testwait.For(t, "both failures are recorded", func() bool { return testutil.ToFloat64(n.metrics.recorded) == 2 })
	assert.Len(t, down.requests(), 3, "three attempts, then the failure is recorded")
	assert.Equal(t, 2.0, testutil.ToFloat64(n.metrics.retries.WithLabelValues("down")))
	assert.Equal(t, 1.0, testutil.ToFloat64(n.metrics.deliveries.WithLabelValues("down", OutcomeFailed)))
	assert.Equal(t, 1.0, testutil.ToFloat64(n.metrics.deliveries.WithLabelValues("private", OutcomeRefused)), "a refused destination is not retried")
	assert.GreaterOrEqual(t, testutil.ToFloat64(n.metrics.refused), 1.0)

	note := rcvNote(t, all, TypeCreated)
	rec, _, err := e.svc.Get(t.Context(), aggregate.RecordID(note, FunctionFor("down")))
	require.NoError(t, err, "the failed delivery is an ExecutionFailed record of the notifier's function")
	assert.Equal(t, CodeDeliveryFailed, rec.Error.ErrorCode)
	assert.Equal(t, aggregate.Unrecoverable, rec.Recoverable)
	assert.Contains(t, rec.Error.ErrorMsg, "answered 503")
	assert.NotContains(t, rec.Error.ErrorMsg, goodSecret)
	refused, _, err := e.svc.Get(t.Context(), aggregate.RecordID(note, FunctionFor("private")))
	require.NoError(t, err)
	assert.Equal(t, CodeRefused, refused.Error.ErrorCode)
	assert.Contains(t, refused.Error.ErrorMsg, "10.0.0.9")

	// The notifier's own records are never notified: a later record's
	// notification arrives, the two failure records' never did.
	e.create(t, "evt-3", fn("shipping", "ship"), "Boom")
	testwait.For(t, "a later record is notified", func() bool { return len(all.ofType(TypeCreated)) == 2 })
	for _, r := range all.requests() {
		assert.NotEqual(t, ProcessorName, r.body.Record.Function.ProcessorName, "no notification about the notifier's own records")
	}
}

func rcvNote(t *testing.T, r *receiver, typ string) string {
	t.Helper()
	testwait.For(t, "a "+typ+" notification", func() bool { return len(r.ofType(typ)) > 0 })
	return r.ofType(typ)[0].header.Get(HeaderEventID)
}

func TestNotifierQuarantinesPoisonMessages(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}]}`)
	e.start(t, cfg)

	subject := e.store.FilterSubject(aggregate.Context, aggregate.AggregateType)
	subject = subject[:len(subject)-1] + "poison"
	_, err := e.js.Publish(t.Context(), subject, []byte("not a stream"))
	require.NoError(t, err)
	id := e.create(t, "evt-1", fn("billing", "charge"), "Boom")
	testwait.For(t, "a good record behind a poison message is notified", func() bool { return len(rcv.ofType(TypeCreated)) == 1 })
	assert.Equal(t, id, rcv.ofType(TypeCreated)[0].header.Get(HeaderRecordID))
	testwait.For(t, "the poison message is quarantined", func() bool {
		entries, err := e.quar.All(t.Context(), quarantine.Query{})
		return err == nil && len(entries) == 1 && entries[0].Consumer == DefaultDurable && entries[0].Reason == quarantine.ReasonUndecodable
	})
}

func TestNotifierRestartDoesNotResend(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "dedupWindow": "0s", "endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}]}`)
	_, stop := e.start(t, cfg)
	e.create(t, "evt-1", fn("billing", "charge"), "Boom")
	testwait.For(t, "first delivery", func() bool { return len(rcv.requests()) == 1 })
	// The ack follows the endpoint's answer: a stop before it would have
	// the message redelivered, as at-least-once delivery must.
	e.settled(t, DefaultDurable)
	stop()

	e.create(t, "evt-2", fn("billing", "charge"), "Boom") // while no notifier runs
	e.start(t, cfg)
	testwait.For(t, "the record created while stopped is delivered after the restart", func() bool { return len(rcv.requests()) == 2 })
	e.create(t, "evt-3", fn("billing", "charge"), "Boom")
	testwait.For(t, "and the next", func() bool { return len(rcv.requests()) == 3 })
	ids := map[string]int{}
	for _, r := range rcv.requests() {
		ids[r.header.Get(HeaderRecordID)]++
	}
	assert.Len(t, ids, 3, "nothing delivered before the restart is sent again: %v", ids)
}

func TestNotifierSendsBatchResults(t *testing.T) {
	e := newEnv(t)
	kv, err := e.js.CreateOrUpdateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: batchBucket})
	require.NoError(t, err)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}]}`)
	e.start(t, cfg)
	testwait.For(t, "the batch consumer", func() bool {
		_, err := e.js.Consumer(t.Context(), batchStream, DefaultDurable+"-batches")
		return err == nil
	})
	_, err = kv.Put(t.Context(), "k_idem", []byte(`{}`))
	require.NoError(t, err)
	_, err = kv.Put(t.Context(), "b_1", []byte(`{"running": true}`))
	require.NoError(t, err)
	_, err = kv.Put(t.Context(), "b_1", []byte(`{"result": {"command": "prepare_compensation", "requestId": "r-1", "matched": 3, "counts": {"applied": 3}, "complete": true}}`))
	require.NoError(t, err)
	testwait.For(t, "one batch notification", func() bool { return len(rcv.ofType(TypeBatchCompleted)) == 1 })
	b := rcv.ofType(TypeBatchCompleted)[0].body.Batch
	require.NotNil(t, b)
	assert.Equal(t, "r-1", b.RequestID)
	assert.Equal(t, 3, b.Counts["applied"])
	assert.Len(t, rcv.requests(), 1, "idempotency keys and running batches are not notified")
}

func TestDigestStates(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}],
		"rules": [{"events": ["created"], "processor": "nobody"}], "digest": {"interval": "1h"}}`)
	n, stop := e.start(t, cfg)
	digests := func() [][]DigestGroup {
		var out [][]DigestGroup
		for _, r := range rcv.ofType(TypeDigest) {
			out = append(out, r.body.Digest)
		}
		return out
	}
	waitCounted := func(failures, successes uint64) {
		testwait.For(t, fmt.Sprintf("%d failures and %d successes counted", failures, successes), func() bool {
			kv, err := e.js.KeyValue(t.Context(), DefaultDigestBucket)
			if err != nil {
				return false
			}
			e, err := kv.Get(t.Context(), groupKey("orders/billing/charge", "Boom"))
			if err != nil {
				return false
			}
			var g group
			_ = json.Unmarshal(e.Value(), &g)
			return g.Failures == failures && g.Successes == successes
		})
	}
	a := e.create(t, "evt-1", fn("billing", "charge"), "Boom")
	e.failAgain(t, a, "Boom")
	waitCounted(2, 0)
	sent, err := n.SendDigest(t.Context())
	require.NoError(t, err)
	require.True(t, sent)
	require.Len(t, digests(), 1)
	assert.Equal(t, []DigestGroup{{Function: "orders/billing/charge", ErrorCode: "Boom", State: DigestNew, Failures: 2}}, digests()[0])

	sent, err = n.SendDigest(t.Context())
	require.NoError(t, err)
	assert.False(t, sent, "at most one digest per interval")

	// A restart keeps the state: the next digest says still failing. (Once
	// every message is acked: a redelivered one would be counted again.)
	e.settled(t, DefaultDurable)
	stop()
	n, stop = e.start(t, cfg)
	e.clock.Set(t0.Add(61 * time.Minute))
	e.failAgain(t, a, "Boom")
	waitCounted(1, 0)
	sent, err = n.SendDigest(t.Context())
	require.NoError(t, err)
	require.True(t, sent)
	assert.Equal(t, DigestStillFailing, digests()[1][0].State)
	assert.EqualValues(t, 1, digests()[1][0].Failures, "counts since the last digest")

	e.clock.Set(t0.Add(122 * time.Minute))
	e.succeed(t, a)
	waitCounted(0, 1)
	_, err = n.SendDigest(t.Context())
	require.NoError(t, err)
	assert.Equal(t, DigestResolved, digests()[2][0].State)

	e.clock.Set(t0.Add(183 * time.Minute))
	e.create(t, "evt-2", fn("billing", "charge"), "Boom")
	waitCounted(1, 0)
	_, err = n.SendDigest(t.Context())
	require.NoError(t, err)
	assert.Equal(t, DigestRegressed, digests()[3][0].State)
	_ = stop
	_ = strconv.Itoa
}

func TestNotifierReleasesTheKeyOfAFailedDelivery(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, goodSecret)
	rcv.setStatus(500)
	cfg := e.config(t, `{"allowHosts": ["receiver.test"], "dedupWindow": "1h", "retry": {"attempts": 2, "first": "10ms", "max": "10ms"},
		"endpoints": [{"name": "ops", "url": "`+rcv.url("/")+`", "secrets": [{"env": "SECRET"}]}], "rules": [{"events": ["applied"]}]}`)
	n, _ := e.start(t, cfg)
	id := e.create(t, "evt-1", fn("billing", "charge"), "Boom")
	e.failAgain(t, id, "Boom")
	testwait.For(t, "the failed delivery is recorded", func() bool { return testutil.ToFloat64(n.metrics.recorded) == 1 })
	rcv.setStatus(200)
	e.failAgain(t, id, "Boom") // the same key, within the window
	testwait.For(t, "the next notification with the key is sent, not dropped", func() bool {
		reqs := rcv.ofType(TypeApplied)
		return len(reqs) == 3 && reqs[2].header.Get(HeaderEventID) != reqs[0].header.Get(HeaderEventID)
	})
	assert.Zero(t, testutil.ToFloat64(n.metrics.dropped.WithLabelValues("ops")))
}
