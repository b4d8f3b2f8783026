package processor_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// killRig is a kill -9 loop's parent side: a JetStream server on loopback
// that outlives the children, and how to start a child.
type killRig struct {
	t       *testing.T
	url     string
	js      jetstream.JetStream
	store   *jsstore.Store
	logPath string // the children's call log; logPath.log their slog lines
	test    string // the test the child runs
	env     string // the child's environment variable
}

// kills is how many times a kill loop kills its child: def, or
// AMENDS_KILLS for a long run.
func kills(def int) int {
	if n, err := strconv.Atoi(os.Getenv("AMENDS_KILLS")); err == nil && n > 0 {
		return n
	}
	return def
}

func newKillRig(t *testing.T, test, env string) *killRig {
	t.Helper()
	if testing.Short() {
		t.Skip("runs child processes")
	}
	srv := natstest.NewListening(t) // the children connect to it
	_, js := srv.Connect()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	require.NoError(t, store.Provision(t.Context(), ctxName, aggregate.Context))
	r := &killRig{t: t, url: srv.ClientURL(), js: js, store: store, logPath: filepath.Join(t.TempDir(), "calls.log"), test: test, env: env}
	t.Cleanup(func() {
		if t.Failed() { // what the children logged, to find the cause
			if b, err := os.ReadFile(r.logPath + ".log"); err == nil {
				t.Logf("children's log:\n%s", b)
			}
		}
	})
	return r
}

// child starts a child process running the test's child side.
func (r *killRig) child() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+r.test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), r.env+"="+r.url+"|"+r.logPath)
	cmd.Stderr = os.Stderr
	require.NoError(r.t, cmd.Start())
	return cmd
}

// killChildRig is a kill loop's child side: its connection, store, record
// service and recorder, the call log it appends to, and its logger.
type killChildRig struct {
	js     jetstream.JetStream
	store  *jsstore.Store
	svc    *aggregate.Service
	rec    *recorder.Recorder
	calls  *os.File
	logger *slog.Logger
}

// childFail ends a child that cannot run.
func childFail(err error) {
	fmt.Fprintln(os.Stderr, "kill child:", err)
	os.Exit(3)
}

// newKillChild sets up the child from its environment variable env; it
// logs at level and above.
func newKillChild(env string, level slog.Level) killChildRig {
	url, logPath, _ := strings.Cut(os.Getenv(env), "|")
	nc, err := nats.Connect(url)
	if err != nil {
		childFail(err)
	}
	var c killChildRig
	if c.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second)); err != nil {
		childFail(err)
	}
	if c.store, err = jsstore.New(c.js); err != nil {
		childFail(err)
	}
	c.svc = aggregate.NewService(c.store)
	if c.rec, err = recorder.New(c.svc); err != nil {
		childFail(err)
	}
	if c.calls, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		childFail(err)
	}
	logOut, err := os.OpenFile(logPath+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		childFail(err)
	}
	c.logger = slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level})).With("pid", os.Getpid())
	return c
}

// run runs p until SIGTERM or SIGKILL, then exits.
func (c killChildRig) run(p *processor.Processor) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		childFail(err)
	}
	os.Exit(0)
}

// killLoop starts a child and kills it with SIGKILL after a random
// 150–750 ms, n times (the random moment is the point of the test).
func (r *killRig) killLoop(n int, rnd *rand.Rand) {
	for i := range n {
		cmd := r.child()
		time.Sleep(time.Duration(150+rnd.IntN(600)) * time.Millisecond)
		require.NoError(r.t, cmd.Process.Signal(syscall.SIGKILL), "kill %d", i)
		_ = cmd.Wait()
	}
}

// last starts the child that is let run until the test ends.
func (r *killRig) last() {
	cmd := r.child()
	r.t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
}
