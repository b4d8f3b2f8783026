package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/notify"
)

// countingReceiver counts, per dedup key, the distinct notifications (by
// Amends-Event-Id) and the requests it got, and checks every signature.
type countingReceiver struct {
	mu       sync.Mutex
	byKey    map[string]map[string]int
	requests int
	badSigs  int
}

func (c *countingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b notify.Body
	_ = json.Unmarshal(body, &b)
	key := "?"
	if rec := b.Record; rec != nil {
		f := rec.Function
		key = b.Type + ":" + f.ContextName + "/" + f.ProcessorName + "/" + f.Name + ":" + rec.ID + ":" + rec.ErrorCode
	}
	c.mu.Lock()
	c.requests++
	if !checkSignature(notifySecret, r, body) {
		c.badSigs++
	}
	if c.byKey[key] == nil {
		c.byKey[key] = map[string]int{}
	}
	c.byKey[key][r.Header.Get(notify.HeaderEventID)]++
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *countingReceiver) counts() (keys, requests int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey), c.requests
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// TestBinaryNotifierSurvivesKill9 kills serve with SIGKILL during a burst
// of 1000 failures (800 records created, 100 of them failing again twice)
// and restarts it: every notification is delivered at least once, and
// within the dedup window exactly one notification per key reaches the
// receiver (a request re-sent after the crash carries the same
// Amends-Event-Id, which receivers de-duplicate on).
func TestBinaryNotifierSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const created, again = 800, 100 // 800 + 2·100 = 1000 failures
	bin := buildBinary(t)
	rcv := &countingReceiver{byKey: map[string]map[string]int{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "notify.json")
	require.NoError(t, os.WriteFile(cfgFile, []byte(fmt.Sprintf(`{
		"allowHosts": ["localhost"],
		"endpoints": [{"name": "ops", "url": "http://localhost:%d/hook", "secrets": [{"env": "NOTIFY_TEST_SECRET"}]}],
		"rules": [{"events": ["created", "applied"]}],
		"dedupWindow": "1h",
		"retry": {"attempts": 20, "first": "50ms", "max": "500ms"}
	}`, srv.Listener.Addr().(*net.TCPAddr).Port)), 0o600))
	natsPort := freeLoopbackPort(t)
	natsURL := "nats://127.0.0.1:" + strconv.Itoa(natsPort)

	start := func() *exec.Cmd {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, "serve", "--data-dir", filepath.Join(dir, "data"), "--nats-listen", "127.0.0.1:"+strconv.Itoa(natsPort),
			"--http", "127.0.0.1:0", "--scheduler=false", "--notify-config", cfgFile)
		cmd.Env = append(cleanEnv(), "NOTIFY_TEST_SECRET="+notifySecret)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 10000)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				default: // the test reads only up to "amends serving"
				}
			}
		}()
		for line := recv(t, lines, "log line"); ; line = recv(t, lines, "log line") {
			if line == "" {
				t.Fatal("serve ended its log before it was ready")
			}
			if strings.Contains(line, "amends serving") {
				return cmd
			}
		}
	}
	first := start()

	nc, err := nats.Connect(natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	store, err := jsstore.New(js)
	require.NoError(t, err)
	svc := aggregate.NewService(store)
	stream := store.StreamName(aggregate.Context)
	require.Eventually(t, func() bool {
		_, err := js.Consumer(t.Context(), stream, notify.DefaultDurable)
		return err == nil
	}, waitLimit, 10*time.Millisecond, "the notifier's consumer never appeared")

	f := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "orders", ProcessorName: "billing", Name: "charge"}
	// exec runs one command until it is applied (or was already), across the
	// kill and the restart; its command id makes a retry idempotent.
	exec1 := func(id, cmdID string, c aggregate.Command) error {
		deadline := time.Now().Add(waitLimit)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := svc.Execute(ctx, id, c, aggregate.Meta{CommandID: cmdID})
			cancel()
			if err == nil || time.Now().After(deadline) {
				return err
			}
			_ = wait.Sleep(t.Context(), 20*time.Millisecond) // a retry's backoff while NATS is down, bounded by the deadline
		}
	}
	var produced atomic.Int64
	producerDone := make(chan error, 1)
	began := time.Now()
	go func() {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < created; i += 8 {
					ev := "evt-" + strconv.Itoa(i)
					id := aggregate.RecordID(ev, f)
					err := exec1(id, "create-"+ev, aggregate.CreateExecutionFailed{
						EventID:  aggregate.EventID{ID: ev, AggregateID: aggregate.WireAggregateID{ContextName: "orders", AggregateName: "order", AggregateID: "o-" + ev, TenantID: aggregate.DefaultTenantID}, Version: 1},
						Function: f, Error: aggregate.ErrorDetails{ErrorCode: "Boom", ErrorMsg: "card declined"}, ExecuteAt: time.Now().UnixMilli(),
					})
					produced.Add(1)
					for k := 0; err == nil && i < again && k < 2; k++ {
						err = exec1(id, fmt.Sprintf("prepare-%s-%d", ev, k), aggregate.PrepareCompensation{})
						if err == nil {
							err = exec1(id, fmt.Sprintf("fail-%s-%d", ev, k), aggregate.ApplyExecutionFailed{Error: aggregate.ErrorDetails{ErrorCode: "Boom", ErrorMsg: "declined again"}, ExecuteAt: time.Now().UnixMilli()})
							produced.Add(1)
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		producerDone <- <-errs
	}()

	// kill -9 once deliveries are under way.
	require.Eventually(t, func() bool { _, n := rcv.counts(); return n >= 100 }, waitLimit, time.Millisecond, "no deliveries")
	atKill := produced.Load()
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	_, delivered := rcv.counts()
	t.Logf("killed serve after %d of 1000 failures were produced and %d requests delivered", atKill, delivered)
	start()

	select {
	case err := <-producerDone:
		require.NoError(t, err, "the burst completes across the restart")
	case <-time.After(2 * waitLimit):
		t.Fatal("the burst did not complete")
	}
	want := created + again
	require.Eventually(t, func() bool {
		keys, _ := rcv.counts()
		if keys < want {
			return false
		}
		cons, err := js.Consumer(t.Context(), stream, notify.DefaultDurable)
		if err != nil {
			return false
		}
		info, err := cons.Info(t.Context())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, 2*waitLimit, 20*time.Millisecond, "every notification delivered and the consumer drained")
	elapsed := time.Since(began)

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	assert.Zero(t, rcv.badSigs, "every request's signature verifies")
	assert.Len(t, rcv.byKey, want, "one key per created record and per record that failed again")
	resent := 0
	for i := range created {
		id := aggregate.RecordID("evt-"+strconv.Itoa(i), f)
		types := []string{"created"}
		if i < again {
			types = append(types, "applied")
		}
		for _, typ := range types {
			key := typ + ":orders/billing/charge:" + id + ":Boom"
			events := rcv.byKey[key]
			if !assert.Len(t, events, 1, "exactly one notification for %s", key) {
				continue
			}
			for _, n := range events {
				resent += n - 1
			}
		}
	}
	t.Logf("%d keys delivered in %s: %d requests, %d of them re-sent after the kill with the same event id", len(rcv.byKey), elapsed.Round(time.Millisecond), rcv.requests, resent)
}
