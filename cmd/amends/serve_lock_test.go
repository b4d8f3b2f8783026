package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeRefusesADataDirInUse(t *testing.T) {
	dir := t.TempDir()
	var first cli
	r := first.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1")

	var second cli
	code := second.run(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0")
	stderr := second.stderr.String()
	assert.Equal(t, exitFailure, code, "stderr:\n%s", stderr)
	assert.Contains(t, stderr, "amends: --data-dir: data directory "+dir+" is in use by process "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, stderr, filepath.Join(dir, "amends.lock"))
	assert.NotContains(t, stderr, "natsconn")

	// The first serve is unharmed, and its stop frees the directory.
	connectJS(t, r.info.NATSURL)
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", first.stderr.String())
	var third cli
	r = third.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1")
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", third.stderr.String())
}

func TestBinaryDataDirLock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	start := func() (*exec.Cmd, <-chan string) {
		cmd := exec.CommandContext(t.Context(), bin, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0")
		cmd.Env = cleanEnv()
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 1000)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		return cmd, lines
	}
	waitServing := func(lines <-chan string) {
		t.Helper()
		for line := recv(t, lines, "log line"); !strings.Contains(line, "amends serving"); line = recv(t, lines, "log line") {
			if line == "" {
				t.Fatal("serve ended its log before it was ready")
			}
		}
	}

	first, lines := start()
	waitServing(lines)

	second := exec.CommandContext(t.Context(), bin, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0")
	second.Env = cleanEnv()
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the second serve must fail, got %v:\n%s", err, out)
	assert.Equal(t, exitFailure, exit.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "data directory "+dir+" is in use by process "+strconv.Itoa(first.Process.Pid))

	// kill -9 leaves no stale lock: the kernel releases it.
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	third, lines := start()
	waitServing(lines)
	require.NoError(t, third.Process.Signal(syscall.SIGTERM))
	require.NoError(t, third.Wait(), "serve after a kill -9 of the holder must run and stop cleanly")
}
