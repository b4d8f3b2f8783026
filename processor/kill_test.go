package processor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// The kill -9 loop: a child process runs an Ordered function while the
// test appends events, replays the holds' heads as a scheduler would, and
// kills the child with SIGKILL at random moments, then starts it again.
// In the end no aggregate's events reached the function out of version
// order and every event was handled. AMENDS_KILLS sets the number of kills
// (12 by default):
//
//	AMENDS_KILLS=50 go test -count=1 -run TestOrderedKillLoop -v ./processor/
const killChildEnv = "AMENDS_KILL_CHILD"

func TestOrderedKillLoop(t *testing.T) {
	if os.Getenv(killChildEnv) != "" {
		killChild()
		return
	}
	kills := 8 // AMENDS_KILLS=50 for the long run
	if n, err := strconv.Atoi(os.Getenv("AMENDS_KILLS")); err == nil && n > 0 {
		kills = n
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	srv.Start()
	require.True(t, srv.ReadyForConnections(10*time.Second))
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second))
	require.NoError(t, err)
	store, err := jsstore.New(js)
	require.NoError(t, err)
	require.NoError(t, store.Provision(t.Context(), ctxName, aggregate.Context))
	svc := aggregate.NewService(store)
	hs, err := processor.OpenHolds(t.Context(), js, 1)
	require.NoError(t, err)
	logPath := filepath.Join(t.TempDir(), "calls.log")
	t.Cleanup(func() {
		if t.Failed() { // what the children logged at Info and above, to find the cause
			if b, err := os.ReadFile(logPath + ".log"); err == nil {
				t.Logf("children's log:\n%s", b)
			}
		}
	})

	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOrderedKillLoop$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+srv.ClientURL()+"|"+logPath)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		return cmd
	}

	// The writer appends versions to 8 aggregates; the scheduler replays
	// every FAILED head.
	const aggregates = 8
	var (
		mu       sync.Mutex
		versions = make(map[string]uint64)
	)
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	appendOne := func(r *rand.Rand) {
		id := fmt.Sprintf("o-%d", r.IntN(aggregates))
		mu.Lock()
		v := versions[id] + 1
		mu.Unlock()
		st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order(id), CreateTime: t0,
			Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: json.RawMessage(`{}`)}}}
		if _, err := store.Append(context.Background(), st, v-1); err == nil {
			mu.Lock()
			versions[id] = v
			mu.Unlock()
		}
	}
	prepareHeads := func() {
		list, _, err := hs.List(context.Background(), processor.HoldFilter{Context: ctxName}, processor.MaxHoldList)
		if err != nil {
			return
		}
		for _, h := range list {
			if st, _, err := svc.Get(context.Background(), h.Head.Record); err == nil && st.Status == aggregate.StatusFailed && !h.Releasing {
				_, _ = svc.Execute(context.Background(), h.Head.Record, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test"})
			}
		}
	}
	bg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for ctx.Err() == nil {
			appendOne(r)
			time.Sleep(2 * time.Millisecond) // the pace of the writer, not a wait for a result
		}
	})
	bg.Go(func() {
		for ctx.Err() == nil {
			prepareHeads()
			time.Sleep(50 * time.Millisecond) // the scheduler's period
		}
	})

	r := rand.New(rand.NewPCG(3, 4))
	for i := range kills {
		cmd := child()
		time.Sleep(time.Duration(150+r.IntN(600)) * time.Millisecond) // when to kill: the point of the test
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL), "kill %d", i)
		_ = cmd.Wait()
	}
	cancel()
	bg.Wait()

	// A last child runs until every hold is released and every event acked.
	cmd := child()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		prepareHeads()
		list, _, err := hs.List(context.Background(), processor.HoldFilter{Context: ctxName}, processor.MaxHoldList)
		if err != nil || len(list) > 0 {
			return false
		}
		s, err := js.Stream(context.Background(), store.StreamName(ctxName))
		if err != nil {
			return false
		}
		si, err := s.Info(context.Background())
		if err != nil {
			return false
		}
		c, err := js.Consumer(context.Background(), store.StreamName(ctxName), processor.DurableName(ctxName, "Projector"))
		if err != nil {
			return false
		}
		ci, err := c.Info(context.Background())
		return err == nil && ci.AckFloor.Stream >= si.State.LastSeq && ci.NumAckPending == 0
	}, 4*waitFor, 50*time.Millisecond, "every hold released and every event acked")

	calls, ok := readCalls(t, logPath)
	total := 0
	for id, last := range versions {
		total += int(last)
		prev := uint64(0)
		for _, v := range calls[id] {
			require.GreaterOrEqual(t, v, prev, "%s: version %d after %d; calls %v", id, v, prev, calls[id])
			prev = v
		}
		for v := uint64(1); v <= last; v++ {
			require.True(t, ok[id][v], "%s version %d was lost; calls %v", id, v, calls[id])
		}
	}
	t.Logf("%d kills, %d events over %d aggregates, %d calls: none lost, none out of order", kills, total, len(versions), len(strings.Split(mustRead(t, logPath), "\n"))-1)
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// readCalls parses the child's log: "<id> <version> ok|fail" per call.
func readCalls(t *testing.T, path string) (map[string][]uint64, map[string]map[uint64]bool) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	calls, ok := map[string][]uint64{}, map[string]map[uint64]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) != 3 {
			continue // a line cut by the kill
		}
		v, err := strconv.ParseUint(parts[1], 10, 64)
		require.NoError(t, err)
		calls[parts[0]] = append(calls[parts[0]], v)
		if parts[2] == "ok" {
			if ok[parts[0]] == nil {
				ok[parts[0]] = map[uint64]bool{}
			}
			ok[parts[0]][v] = true
		}
	}
	return calls, ok
}

// killChild is the child process: a processor with an Ordered function
// that fails on every seventh (aggregate, version) unless replayed, and
// logs every call before it returns.
func killChild() {
	url, logPath, _ := strings.Cut(os.Getenv(killChildEnv), "|")
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "kill child:", err)
		os.Exit(3)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		fail(err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second))
	if err != nil {
		fail(err)
	}
	store, err := jsstore.New(js)
	if err != nil {
		fail(err)
	}
	svc := aggregate.NewService(store)
	rec, err := recorder.New(svc)
	if err != nil {
		fail(err)
	}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fail(err)
	}
	logOut, err := os.OpenFile(logPath+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fail(err)
	}
	logger := slog.New(slog.NewTextHandler(logOut, nil)).With("pid", os.Getpid())
	var mu sync.Mutex
	p, err := processor.New(js, store, ctxName, processor.WithRecorder(rec), processor.WithRecords(svc),
		processor.WithLogger(logger), processor.WithAckWait(time.Second), processor.WithNakDelay(20*time.Millisecond),
		processor.WithImmediateRetry(processor.Retry{}))
	if err != nil {
		fail(err)
	}
	handler := func(ctx context.Context, d *processor.Delivery) error {
		h := fnv.New32a()
		fmt.Fprintf(h, "%s@%d", d.Stream.Aggregate.ID, d.Stream.Version)
		_, replay := processor.CompensationFrom(ctx)
		failing := h.Sum32()%7 == 0 && !replay
		result := "ok"
		if failing {
			result = "fail"
		}
		mu.Lock()
		fmt.Fprintf(out, "%s %d %s\n", d.Stream.Aggregate.ID, d.Stream.Version, result)
		mu.Unlock()
		if failing {
			return errBoom
		}
		return nil
	}
	if err := p.Register(fn("Projector", "onStep"), handler, processor.Ordered()); err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		fail(err)
	}
	os.Exit(0)
}
