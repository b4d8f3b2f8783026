package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildBinary builds the amends command into a temporary directory.
func buildBinary(tb testing.TB) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go command not found: skipping the test of the built binary")
	}
	bin := filepath.Join(tb.TempDir(), "amends")
	out, err := exec.CommandContext(tb.Context(), gobin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(tb, err, "go build:\n%s", out)
	return bin
}

func TestBinaryExitCodesAndSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)

	t.Run("usage error exits 2", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), bin, "serve", "--replicas", "0")
		cmd.Env = cleanEnv()
		err := cmd.Run()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "want an exit error, got %v", err)
		assert.Equal(t, exitUsage, exit.ExitCode())
	})

	t.Run("SIGTERM stops serve cleanly", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), bin, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0")
		cmd.Env = cleanEnv()
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan string, 100)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		for line := recv(t, lines, "log line"); !strings.Contains(line, "amends serving"); line = recv(t, lines, "log line") {
			if line == "" { // lines is closed
				t.Fatal("serve ended its log before it was ready")
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		var rest []string
		for line := range lines {
			rest = append(rest, line)
		}
		require.NoError(t, cmd.Wait(), "serve must exit 0 after SIGTERM; log:\n%s", strings.Join(rest, "\n"))
		assert.Contains(t, strings.Join(rest, "\n"), `msg="amends stopped"`)
	})
}

// cleanEnv is the test's environment without AMENDS_ variables, which
// would change what the binary does.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			env = append(env, kv)
		}
	}
	return env
}
