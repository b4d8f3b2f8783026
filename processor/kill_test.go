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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
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
	kills := kills(8)
	rig := newKillRig(t, "TestOrderedKillLoop", killChildEnv)
	js, store, logPath := rig.js, rig.store, rig.logPath
	svc := aggregate.NewService(store)
	hs, err := processor.OpenHolds(t.Context(), js, 1)
	require.NoError(t, err)
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

	rig.killLoop(kills, rand.New(rand.NewPCG(3, 4)))
	cancel()
	bg.Wait()

	// A last child runs until every hold is released and every event acked.
	rig.last()
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
	c := newKillChild(killChildEnv, slog.LevelInfo)
	var mu sync.Mutex
	p, err := processor.New(c.js, c.store, ctxName, processor.WithRecorder(c.rec), processor.WithRecords(c.svc),
		processor.WithLogger(c.logger), processor.WithAckWait(time.Second), processor.WithNakDelay(20*time.Millisecond),
		processor.WithImmediateRetry(processor.Retry{}))
	if err != nil {
		childFail(err)
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
		fmt.Fprintf(c.calls, "%s %d %s\n", d.Stream.Aggregate.ID, d.Stream.Version, result)
		mu.Unlock()
		if failing {
			return errBoom
		}
		return nil
	}
	if err := p.Register(fn("Projector", "onStep"), handler, processor.Ordered()); err != nil {
		childFail(err)
	}
	c.run(p)
}
