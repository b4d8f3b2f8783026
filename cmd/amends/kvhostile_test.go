package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/notify"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rules"
	"github.com/amends-dev/amends/scheduler"
)

// hostileEnv is a running serve and an embedded service (context shop,
// an Ordered function Projector.onStep that fails while told to, with the
// operators' rules and a build registry) on serve's NATS server.
type hostileEnv struct {
	t       *testing.T
	dir     string
	serve   *running
	cli     *cli
	js      jetstream.JetStream
	store   *jsstore.Store
	svc     *aggregate.Service
	failing sync.Map // aggregate id → failing
	calls   sync.Map // "id@v" → times called
	stopP   func()
	procErr chan error
	hook    *hookReceiver
}

var projectorFn = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "shop", ProcessorName: "Projector", Name: "onStep"}

// hookReceiver collects the types of the notifications serve sends, by
// record id.
type hookReceiver struct {
	mu   sync.Mutex
	seen map[string][]string
	srv  *httptest.Server
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{seen: map[string][]string{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b notify.Body
		_ = json.Unmarshal(raw, &b)
		h.mu.Lock()
		if b.Record != nil {
			h.seen[b.Record.ID] = append(h.seen[b.Record.ID], b.Type)
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) got(id, typ string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range h.seen[id] {
		if x == typ {
			return true
		}
	}
	return false
}

func (e *hostileEnv) startServe(extra ...string) {
	e.t.Helper()
	url := "http://localhost:" + strconv.Itoa(e.hook.srv.Listener.Addr().(*net.TCPAddr).Port) + "/hook"
	e.cli = &cli{env: map[string]string{"HOOK_SECRET": notifySecret}}
	args := append([]string{"serve", "--data-dir", e.dir, "--nats-listen", "127.0.0.1:-1", "--scheduler-period", "1s", "--scheduler-initial-delay", "0s",
		"--scheduler-batch", "5", "--notify-url", url, "--notify-secret-env", "HOOK_SECRET", "--notify-allow-host", "localhost"}, extra...)
	e.serve = e.cli.startServe(e.t, args...)
	e.js = connectJS(e.t, e.serve.info.NATSURL)
	var err error
	e.store, err = jsstore.New(e.js)
	require.NoError(e.t, err)
	require.NoError(e.t, e.store.Provision(e.t.Context(), "shop"))
	e.svc = aggregate.NewService(e.store)
	e.waitReady()
}

func (e *hostileEnv) waitReady() {
	e.t.Helper()
	var last string
	require.Eventually(e.t, func() bool {
		resp, err := http.Get(e.serve.info.HTTPURL + "/readyz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(b)
		return resp.StatusCode == http.StatusOK
	}, waitLimit, 10*time.Millisecond, "serve is ready: %s", func() string { return last })
}

// startProcessor runs the embedded service until the test stops it.
func (e *hostileEnv) startProcessor() {
	e.t.Helper()
	ctx := e.t.Context()
	st, err := rules.OpenStore(ctx, e.js)
	require.NoError(e.t, err)
	watcher := st.Watcher(time.Hour, nil)
	rec, err := recorder.New(e.svc, recorder.WithRules(watcher))
	require.NoError(e.t, err)
	reg, err := processor.OpenBuildRegistry(ctx, e.js, "", 0, 0)
	require.NoError(e.t, err)
	p, err := processor.New(e.js, e.store, "shop", processor.WithRecorder(rec), processor.WithRecords(e.svc),
		processor.WithNakDelay(50*time.Millisecond), processor.WithBuildRegistry(reg, processor.Build{Version: "v1.0.0"}),
		processor.WithServerSkew(0)) // one server: a progress written before its version is told at once
	require.NoError(e.t, err)
	spec := aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 1, ExecutionTimeout: 30}
	require.NoError(e.t, p.Register(processor.Function{Processor: "Projector", Name: "onStep", Kind: aggregate.KindEvent, AggregateTypes: []string{"order"}},
		func(_ context.Context, d *processor.Delivery) error {
			k := d.Stream.Aggregate.ID + "@" + strconv.FormatUint(d.Stream.Version, 10)
			n, _ := e.calls.LoadOrStore(k, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			if f, ok := e.failing.Load(d.Stream.Aggregate.ID); ok && f.(bool) {
				return fmt.Errorf("boom: %w", errBoomCode)
			}
			return nil
		}, processor.Ordered(), processor.RetrySpec(spec)))
	wctx, cancel := context.WithCancel(context.Background())
	e.procErr = make(chan error, 2)
	go func() { e.procErr <- watcher.Run(wctx) }()
	go func() { e.procErr <- p.Run(wctx) }()
	stopped := false
	e.stopP = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for range 2 {
			select {
			case err := <-e.procErr:
				require.NoError(e.t, err)
			case <-time.After(waitLimit):
				e.t.Fatalf("the service did not stop")
			}
		}
	}
	e.t.Cleanup(e.stopP)
	<-watcher.Ready()
}

var errBoomCode = &codedError{"Boom"}

type codedError struct{ code string }

func (c *codedError) Error() string { return c.code }
func (c *codedError) Code() string  { return c.code }

func (e *hostileEnv) emit(id string, v uint64) eventstore.Stream {
	return e.emitEvent(id, v, uuid.NewString())
}

// emitEvent appends version v of order id, one event of id eventID.
func (e *hostileEnv) emitEvent(id string, v uint64, eventID string) eventstore.Stream {
	e.t.Helper()
	st, err := e.store.Append(e.t.Context(), eventstore.Stream{ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: "shop", Type: "order", ID: id},
		CommandID: uuid.NewString(), Events: []eventstore.Event{{ID: eventID, Name: "step", Body: []byte(`{}`)}}}, v-1)
	require.NoError(e.t, err)
	return st
}

func (e *hostileEnv) called(id string, v uint64) int64 {
	n, ok := e.calls.Load(id + "@" + strconv.FormatUint(v, 10))
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

func (e *hostileEnv) put(bucket, key, value string) uint64 {
	e.t.Helper()
	ack, err := e.js.Publish(e.t.Context(), "$KV."+bucket+"."+key, []byte(value))
	require.NoError(e.t, err, "%s %s", bucket, key)
	return ack.Sequence
}

func (e *hostileEnv) record(id string) (aggregate.State, bool) {
	st, _, err := e.svc.Get(e.t.Context(), id)
	return st, err == nil
}

// quarantined lists the quarantine through the API: kv entries by bucket
// and key, message entries by stream and sequence.
func (e *hostileEnv) quarantined() map[string]bool {
	e.t.Helper()
	out := map[string]bool{}
	c := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(e.t, exitOK, c.run(e.t, "quarantine", "list", "--all", "-o", "json"), c.stderr.String())
	var page listJSON[api.QuarantineEntry]
	require.NoError(e.t, json.Unmarshal([]byte(c.stdout.String()), &page))
	for _, x := range page.Items {
		if x.Kind == api.QuarantineKindKV {
			out[x.Bucket+" "+x.Key] = true
		} else {
			out[x.Stream+" "+strconv.FormatUint(x.Seq, 10)] = true
		}
	}
	return out
}

func (e *hostileEnv) stillRunning() {
	e.t.Helper()
	select {
	case code := <-e.serve.code:
		e.serve.code <- code
		e.t.Fatalf("serve exited with %d; stderr:\n%s", code, e.cli.stderr.String())
	default:
	}
	select {
	case err := <-e.procErr:
		e.t.Fatalf("the service stopped: %v", err)
	default:
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// Every family of hostile KV entries of issue 26, written one value at a
// time into a running serve and an embedded service: nothing panics,
// serve and the service stay up and ready, new failures are recorded and
// replayed, nothing valid is lost, every bad entry is in the quarantine;
// and the same after a restart of both.
func TestHostileBucketsAgainstServeAndProcessor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve and a service for several seconds")
	}
	e := &hostileEnv{t: t, dir: t.TempDir(), hook: newHookReceiver(t)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", e.cli.stderr.String())
		}
	})
	e.startServe()
	e.startProcessor()
	ctx := t.Context()

	// What is valid: a rule, records of failures, a hold.
	st, err := rules.OpenStore(ctx, e.js)
	require.NoError(t, err)
	good, err := st.Add(ctx, api.Rule{Match: api.RuleMatch{FunctionContext: "shop", Processor: "Projector", Function: "onStep", ErrorCode: "Other"},
		Action: rules.MarkUnrecoverable, Reason: "a valid rule"})
	require.NoError(t, err)
	head, holdKey, _ := e.heldFailure("o-1")
	e.emit("o-2", 1)
	require.Eventually(t, func() bool { return e.called("o-2", 1) == 1 }, waitLimit, 10*time.Millisecond)
	headView, err := projection.GetView(ctx, mustViews(t, e.js), head)
	require.NoError(t, err)

	want := map[string]bool{}
	releaseKey := b64("shop") + "." + b64("Projector")
	match := `{"functionContext":"shop","processor":"Projector","function":"onStep","errorCode":"Boom"}`
	// 1. a release at step -1: serve's scheduler panicked in launch.
	e.put(scheduler.DefaultParkReleaseBucket, releaseKey, `{"context":"shop","processor":"Projector","build":{"version":"v1.0.0"},"phase":"steps","step":-1,"startedAt":1}`)
	want[scheduler.DefaultParkReleaseBucket+" "+releaseKey] = true
	// 2. an APPLY_RETRY_SPEC rule without its spec, and one with maxRetries -5.
	e.put(rules.DefaultBucket, "r-000000000001", `{"id":"r-000000000001","match":`+match+`,"action":"APPLY_RETRY_SPEC","reason":"x","createdAt":1}`)
	e.put(rules.DefaultBucket, "r-000000000002", `{"id":"r-000000000002","match":`+match+`,"action":"APPLY_RETRY_SPEC","retrySpec":{"maxRetries":-5,"minBackoff":1,"executionTimeout":1},"reason":"x","createdAt":1}`)
	// 5. a rule under a key nats.go cannot address.
	e.put(rules.DefaultBucket, "r-ü", `{"id":"r-ü","match":`+match+`,"action":"WAIVE","reason":"x","createdAt":1}`)
	for _, k := range []string{"r-000000000001", "r-000000000002"} {
		want[rules.DefaultBucket+" "+k] = true
	}
	// 3. views of records that do not exist, due before the real ones.
	for range 8 {
		v := headView
		v.State.ID = uuid.NewString()
		v.State.RetryState.NextRetryAt = 1
		b, _ := json.Marshal(v)
		e.put(projection.DefaultBucket, v.State.ID, string(b))
		want[projection.DefaultBucket+" "+v.State.ID] = true
	}
	// 4. a progress far ahead of its aggregate.
	progressKey := processor.HoldKey("shop", "Projector", "onStep", "order", "o-2")
	e.put(processor.ProgressBucket, progressKey, "99")
	want[processor.ProgressBucket+" "+progressKey] = true
	// 8. a hold overwritten with garbage, and a ghost claim on another.
	e.put(processor.HoldBucket, holdKey, "garbage")
	want[processor.HoldBucket+" "+holdKey] = true
	// 9. views that do not validate: not JSON, an empty function.
	e.put(projection.DefaultBucket, head, "not a view")
	want[projection.DefaultBucket+" "+head] = true
	// 10. a dedup claim in the future for the next notification.
	nextEvent := uuid.NewString()
	next := aggregate.RecordID(nextEvent, projectorFn)
	dedup := kvstore.Hash("d_", "default", "created:shop/Projector/onStep:"+next+":Boom")
	e.put(notify.DefaultDedupBucket, dedup, `{"event":"ghost","at":9000000000000000}`)
	want[notify.DefaultDedupBucket+" "+dedup] = true
	// 11. an odd key in the build registry.
	e.put(processor.DefaultBuildBucket, "b-ü", `{}`)
	want[processor.DefaultBuildBucket+" b-ü"] = true

	// The service's next failure is recorded (no rule acts on it), the
	// notification sent, the record replayed by the scheduler.
	e.failing.Store("o-4", true)
	e.emitEvent("o-4", 1, nextEvent)
	require.Eventually(t, func() bool { s, ok := e.record(next); return ok && s.Status == aggregate.StatusFailed }, waitLimit, 10*time.Millisecond, "the new failure is recorded")
	s, _ := e.record(next)
	assert.NotEqual(t, aggregate.Unrecoverable, s.Recoverable, "no invalid rule acted on it")
	assert.Greater(t, s.RetrySpec.MaxRetries, int32(0))
	e.failing.Store("o-4", false)
	require.Eventually(t, func() bool { s, ok := e.record(next); return ok && s.Status == aggregate.StatusSucceeded }, waitLimit, 50*time.Millisecond,
		"the scheduler replays it past the fake views")
	require.Eventually(t, func() bool { return e.hook.got(next, "created") }, waitLimit, 10*time.Millisecond, "the notification is sent despite the future claim")
	// Progress ahead: o-2's next events are held, not dropped.
	e.emit("o-2", 2)
	require.Eventually(t, func() bool { return e.quarantined()[processor.ProgressBucket+" "+progressKey] }, waitLimit, 50*time.Millisecond)
	e.emit("o-2", 3)

	// 6. a garbage message on a record's subject bricks it; skip-message
	// repairs it.
	recSubj, err := e.store.Subject(aggregate.RecordAggregate(next))
	require.NoError(t, err)
	ack, err := e.js.Publish(ctx, recSubj, []byte("garbage"))
	require.NoError(t, err)
	want[ack.Stream+" "+strconv.FormatUint(ack.Sequence, 10)] = true
	_, err = e.svc.Execute(ctx, next, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}, aggregate.Meta{Actor: "test"})
	require.Error(t, err, "bricked")
	op := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(t, exitOK, op.run(t, "repair", "skip-message", "--stream", ack.Stream, "--seq", strconv.FormatUint(ack.Sequence, 10), "--reason", "bad producer", "--dry-run"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "would skip message")
	_, err = e.svc.Execute(ctx, next, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}, aggregate.Meta{Actor: "test"})
	require.Error(t, err, "a dry run changes nothing")
	op = cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(t, exitOK, op.run(t, "repair", "skip-message", "--stream", ack.Stream, "--seq", strconv.FormatUint(ack.Sequence, 10), "--reason", "bad producer", "--yes"), op.stderr.String())
	_, err = e.svc.Execute(ctx, next, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}, aggregate.Meta{Actor: "test"})
	require.NoError(t, err, "the record works again")

	// 5. the hidden rule, which nats.go cannot delete, is purged: only as
	// the quarantine lists it, and never a valid rule.
	hidden := e.quarantinedEntry(rules.DefaultBucket, "r-ü")
	rev := strconv.FormatUint(hidden.Seq, 10)
	op = cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(t, exitNotFound, op.run(t, "repair", "purge-entry", "--bucket", rules.DefaultBucket, "--key", good.ID, "--revision", "1", "--reason", "x", "--yes"),
		"a valid rule is never purged: %s", op.stdout.String())
	op = cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(t, exitOK, op.run(t, "repair", "purge-entry", "--bucket", rules.DefaultBucket, "--key", "r-ü", "--revision", rev, "--reason", "hidden rule", "--yes"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "purged r-ü of bucket amends_rules")
	keys, err := kvstore.Bind(e.js, mustKV(t, e.js, rules.DefaultBucket), kvstore.Spec{}).Keys(ctx, ">")
	require.NoError(t, err)
	assert.NotContains(t, keys, "r-ü", "the hidden rule is gone")

	// 7. the views bucket deleted and created again: every record is back.
	require.NoError(t, e.js.DeleteKeyValue(ctx, projection.DefaultBucket))
	natstest.Recreate(t, func() (jetstream.KeyValue, error) { return projection.OpenViews(ctx, e.js) })

	check := func(when string) {
		t.Helper()
		e.stillRunning()
		e.waitReady()
		for _, id := range []string{head, next} {
			require.Eventually(t, func() bool {
				_, err := projection.GetView(ctx, mustViews(t, e.js), id)
				return err == nil
			}, 90*time.Second, 50*time.Millisecond, "%s: record %s is projected again", when, id)
		}
		var got map[string]bool
		require.Eventually(t, func() bool {
			got = e.quarantined()
			for k := range want {
				if !got[k] {
					return false
				}
			}
			return true
		}, waitLimit, 100*time.Millisecond, "%s: every bad entry is in the quarantine", when)
		st, err := rules.OpenStore(ctx, e.js) // this serve's connection
		require.NoError(t, err)
		holds, err := processor.OpenHolds(ctx, e.js, 1)
		require.NoError(t, err)
		list, err := st.List(ctx, false)
		require.NoError(t, err)
		require.Len(t, list, 1, "%s: only the valid rule", when)
		assert.Equal(t, good.ID, list[0].ID)
		h, err := holds.Get(ctx, holdKey)
		require.NoError(t, err, "%s: the hold is there", when)
		assert.Len(t, h.Held, 1, "%s: nothing held is lost", when)
		assert.Zero(t, e.called("o-2", 3), "%s: held, not run past a progress ahead of its aggregate", when)
	}
	check("running")

	// The same after a restart: start-up never crash-loops.
	e.stopP()
	require.Equal(t, exitOK, e.serve.stop(t), e.cli.stderr.String())
	assert.NotContains(t, e.cli.stderr.String(), "panic")
	e.startServe()
	e.startProcessor()
	check("after a restart")
	e.failing.Store("o-5", true)
	e.emit("o-5", 1)
	id5 := e.emitFailureID("o-5")
	require.Eventually(t, func() bool { _, ok := e.record(id5); return ok }, waitLimit, 10*time.Millisecond, "after a restart: a new failure is recorded")
	e.stillRunning()
}

// heldFailure makes version 1 of order id fail (recorded) and version 2
// held behind it, and returns the record, the hold's key and the holds.
func (e *hostileEnv) heldFailure(id string) (head, holdKey string, holds *processor.Holds) {
	e.t.Helper()
	e.failing.Store(id, true)
	v1 := e.emit(id, 1)
	e.emit(id, 2)
	head = aggregate.RecordID(v1.Events[0].ID, projectorFn)
	require.Eventually(e.t, func() bool { _, ok := e.record(head); return ok }, waitLimit, 10*time.Millisecond, "the failure is recorded")
	holds, err := processor.OpenHolds(e.t.Context(), e.js, 1)
	require.NoError(e.t, err)
	holdKey = processor.HoldKey("shop", "Projector", "onStep", "order", id)
	require.Eventually(e.t, func() bool { h, err := holds.Get(e.t.Context(), holdKey); return err == nil && len(h.Held) == 1 }, waitLimit, 10*time.Millisecond,
		"%s v2 is held", id)
	return head, holdKey, holds
}

// emitFailureID is the record id of a failure of the function on version
// 1 of order id ("" while there is none).
func (e *hostileEnv) emitFailureID(id string) string {
	e.t.Helper()
	st, err := e.store.LoadVersion(e.t.Context(), eventstore.AggregateID{Context: "shop", Type: "order", ID: id}, 1)
	if err != nil {
		return ""
	}
	return aggregate.RecordID(st.Events[0].ID, projectorFn)
}

func mustKV(t *testing.T, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(t.Context(), bucket)
	require.NoError(t, err)
	return kv
}

// quarantinedEntry waits for the quarantine's entry of key of bucket.
func (e *hostileEnv) quarantinedEntry(bucket, key string) api.QuarantineEntry {
	e.t.Helper()
	var found api.QuarantineEntry
	require.Eventually(e.t, func() bool {
		c := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
		if c.run(e.t, "quarantine", "list", "--all", "--consumer", bucket, "-o", "json") != exitOK {
			return false
		}
		var page listJSON[api.QuarantineEntry]
		if json.Unmarshal([]byte(c.stdout.String()), &page) != nil {
			return false
		}
		for _, x := range page.Items {
			if x.Key == key {
				found = x
				return true
			}
		}
		return false
	}, waitLimit, 50*time.Millisecond, "%s %s is quarantined", bucket, key)
	return found
}

func mustViews(t *testing.T, js jetstream.JetStream) *projection.Views {
	t.Helper()
	kv, err := js.KeyValue(t.Context(), projection.DefaultBucket)
	require.NoError(t, err)
	views, err := projection.NewViews(js, kv)
	require.NoError(t, err)
	return views
}

// Finding 8 of "derived state never outranks the event store": a
// forced-open circuit and a WAIVE rule written into their buckets by hand
// acted with no audit entry. Both are refused (the circuit reads as
// closed, the rule matches nothing), quarantined, and their first
// sighting is in the audit log, with the subject they were written to.
func TestValuesWrittenPastAmendsAreRefusedAndAudited(t *testing.T) {
	e := &hostileEnv{t: t, dir: t.TempDir(), hook: newHookReceiver(t)}
	e.startServe()
	f := circuit.Function{Context: "shop", Processor: "Mailer", Name: "onOrder"}
	forced, _ := circuit.Evolve(circuit.New(f), time.Now(), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
	forced.Transitions = nil // no operator named
	raw, err := json.Marshal(forced)
	require.NoError(t, err)
	circuitRev := e.put(circuit.DefaultBucket, f.String(), string(raw))
	match := `{"functionContext":"shop","processor":"Projector","function":"onStep","errorCode":"Boom"}`
	ruleRev := e.put(rules.DefaultBucket, "r-00000000000b", `{"id":"r-00000000000b","match":`+match+`,"action":"WAIVE","reason":"x","actor":"mallory","createdAt":1}`)

	op := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(t, exitOK, op.run(t, "rules", "list", "-o", "json"), op.stderr.String())
	assert.NotContains(t, op.stdout.String(), `"id":"r-00000000000b"`, "the rule is not listed as a rule")
	var routes map[string]string
	require.Eventually(t, func() bool {
		c := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
		if c.run(t, "audit", "--kind", "unaudited_value", "-o", "json") != exitOK {
			return false
		}
		var page listJSON[api.AuditEntry]
		if json.Unmarshal([]byte(c.stdout.String()), &page) != nil {
			return false
		}
		routes = map[string]string{}
		for _, x := range page.Items {
			routes[x.Route] = x.Reason
		}
		return len(routes) == 2
	}, waitLimit, 50*time.Millisecond, "both sightings are in the audit log")
	assert.Contains(t, routes["$KV."+circuit.DefaultBucket+"."+f.String()], fmt.Sprintf("revision %d", circuitRev))
	assert.Contains(t, routes["$KV."+circuit.DefaultBucket+"."+f.String()], "forced")
	assert.Contains(t, routes["$KV."+rules.DefaultBucket+".r-00000000000b"], fmt.Sprintf("revision %d", ruleRev))
	c := cli{env: map[string]string{"AMENDS_SERVER": e.serve.info.HTTPURL}}
	require.Equal(t, exitOK, c.run(t, "circuits", "list", "-o", "json"), c.stderr.String())
	assert.NotContains(t, c.stdout.String(), `"phase":"OPEN"`, "the forged circuit is not open")
}
