package retention_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/retention"
)

// The kill -9 loop of retention: a child process sweeps with an archive
// while the test kills it with SIGKILL, half the times exactly between a
// batch's archive and its removal (the child stops there and says so),
// half the times at a random moment. After every kill, each record whose
// history is gone is in the archive with the history it had (nothing
// removed un-archived); in the end every record is removed once, counted
// once, and archived as it was (nothing lost). AMENDS_KILLS sets the
// number of kills (6 by default).
const (
	sweepChildEnv   = "AMENDS_SWEEP_CHILD"
	sweepArchiveEnv = "AMENDS_SWEEP_ARCHIVE"
	sweepStallEnv   = "AMENDS_SWEEP_STALL"
)

func TestSweepKillLoop(t *testing.T) {
	if url := os.Getenv(sweepChildEnv); url != "" {
		sweepChild(url, os.Getenv(sweepArchiveEnv), os.Getenv(sweepStallEnv) != "")
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	kills := 6
	if n, err := strconv.Atoi(os.Getenv("AMENDS_KILLS")); err == nil && n > 0 {
		kills = n
	}
	srv := natstest.NewListening(t) // the children connect to it
	_, js := srv.Connect()
	e := newRetentionEnv(t, js)

	// 300 records that succeeded at t0, long before now
	const records = 300
	histories := map[string][]eventstore.Stream{}
	versions := map[string]uint64{}
	for i := range records {
		id, v := e.succeed(t, i)
		versions[id] = v
	}
	e.indexed(t, versions)
	for id := range versions {
		h, err := e.store.Load(t.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(t, err)
		histories[id] = h
	}
	dir := t.TempDir()
	sink, err := archive.OpenDir(dir)
	require.NoError(t, err)

	// archived reads every manifest's records back.
	archived := func() map[string][]eventstore.Stream {
		out := map[string][]eventstore.Stream{}
		sweeps, err := archive.Sweeps(t.Context(), sink)
		require.NoError(t, err)
		for _, n := range sweeps {
			m, err := archive.ReadManifest(t.Context(), sink, n)
			require.NoError(t, err)
			for _, o := range m.Objects {
				require.NoError(t, archive.ReadObject(t.Context(), sink, o, func(r archive.Record) error {
					out[r.ID] = r.Streams
					return nil
				}))
			}
		}
		return out
	}
	noneRemovedUnarchived := func(when string) int {
		arch := archived()
		gone := 0
		for id, h := range histories {
			if e.gone(t, id) {
				gone++
				require.Equal(t, h, arch[id], "%s: record %s was removed with its history archived as it was", when, id)
			}
		}
		return gone
	}

	r := rand.New(rand.NewPCG(7, 8))
	stalls := 0
	for i := range kills {
		stall := i%2 == 0
		cmd := exec.Command(os.Args[0], "-test.run=^TestSweepKillLoop$", "-test.count=1")
		cmd.Env = append(os.Environ(), sweepChildEnv+"="+srv.ClientURL(), sweepArchiveEnv+"="+dir)
		if stall {
			cmd.Env = append(cmd.Env, sweepStallEnv+"=1")
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if stall {
			// Killed where it stopped: its batch archived and recorded, nothing of it removed.
			deadline := time.After(time.Minute)
		wait:
			for {
				select {
				case l, ok := <-lines:
					require.True(t, ok, "the child ended before it stalled")
					if strings.HasPrefix(l, "STALLED") {
						stalls++
						break wait
					}
				case <-deadline:
					t.Fatal("the child did not reach a batch's removal within a minute")
				}
			}
		} else {
			time.Sleep(time.Duration(50+r.IntN(250)) * time.Millisecond) // when to kill: the point of the test
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL), "kill %d", i)
		_ = cmd.Wait()
		gone := noneRemovedUnarchived(fmt.Sprintf("after kill %d", i))
		t.Logf("kill %d (stalled before removal: %v): %d of %d records removed", i, stall, gone, records)
		if gone == records {
			break
		}
	}
	require.NotZero(t, stalls)

	// A last sweeper, here, finishes the work.
	sw := e.sweeper(t, retention.Config{Archive: sink, Batch: 20})
	e.clock.Set(time.Now())
	_, err = sw.SweepAll(t.Context())
	require.NoError(t, err)
	assert.Equal(t, records, noneRemovedUnarchived("at the end"), "every record is removed")
	arch := archived()
	for id, h := range histories {
		assert.Equal(t, h, arch[id], "record %s is archived as it was (nothing lost)", id)
	}
	s, _ := e.tallied(t)
	assert.Equal(t, int64(records), s, "each record counted once, whatever the kills hit")
	st, _, err := e.progress.State(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(records), st.Removed)
	assert.Nil(t, st.Pending)
	t.Logf("%d kills (%d between archive and removal): %d records removed in %d batches, each archived and counted once", kills, stalls, records, st.Batch)
}

// sweepChild sweeps the records on the NATS server at url into the archive
// at dir, batches of 10, until it is killed; with stall, it stops at the
// first batch recorded (archived, nothing removed), says STALLED and waits.
func sweepChild(url, dir string, stall bool) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "sweep child:", err)
		os.Exit(2)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		fail(err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second))
	if err != nil {
		fail(err)
	}
	store, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context))
	if err != nil {
		fail(err)
	}
	views, err := projection.OpenViews(ctx, js)
	if err != nil {
		fail(err)
	}
	index, err := projection.NewIndex(views, store)
	if err != nil {
		fail(err)
	}
	go func() { _ = index.Run(ctx) }()
	<-index.Ready()
	progress, err := retention.Open(ctx, js, "", 1)
	if err != nil {
		fail(err)
	}
	sink, err := archive.OpenDir(dir)
	if err != nil {
		fail(err)
	}
	sw, err := retention.New(retention.Config{Succeeded: 30 * day, Batch: 10, Records: index, Store: store, Views: views,
		Progress: progress, Archive: sink, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fail(err)
	}
	if stall {
		retention.SetHook(sw, func(step string) error {
			if step == "pending" {
				fmt.Println("STALLED")
				select {} // killed here
			}
			return nil
		})
	}
	for {
		rep, err := sw.Sweep(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sweep child: sweep:", err)
		}
		if err != nil || rep.Batch == 0 {
			time.Sleep(100 * time.Millisecond) // the pace of passes with nothing to do
		} else {
			time.Sleep(20 * time.Millisecond) // the pace of passes, so that the kills find work under way
		}
	}
}
