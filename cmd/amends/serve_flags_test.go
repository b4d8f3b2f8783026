package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeRefusesBadSettings runs serve with each bad value from the
// command line, from its AMENDS_ variable and from --config: each is a
// usage error (exit 2) that names the flag and its rule, says nothing of
// Go packages, and starts nothing.
func TestServeRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		flag, value string
		want        string
	}{
		{"max-msg-size", "99999999", "--max-msg-size must be between 1024 and 67108864 bytes (64 MiB is the largest max_payload of a NATS server), got 99999999"},
		{"max-msg-size", "1000", "--max-msg-size must be between 1024 and 67108864 bytes"},
		{"compression", "zstd", `--compression must be s2 or none, got "zstd"`},
		{"lease-ttl", "1ms", "--lease-ttl must be between 1s and 24h, got 1ms"},
		{"lease-ttl", "25h", "--lease-ttl must be between 1s and 24h, got 25h"},
		{"index-snapshot-every", "500ms", "--index-snapshot-every must be between 1s and 24h (0: off), got 500ms"},
		{"index-snapshot-every", "-1s", "--index-snapshot-every must be between 1s and 24h (0: off), got -1s"},
		{"index-snapshot-every", "25h", "--index-snapshot-every must be between 1s and 24h (0: off), got 25h"},
		{"startup-timeout", "1s", "--startup-timeout must be between 5s and 1h, got 1s"},
		{"startup-timeout", "2h", "--startup-timeout must be between 5s and 1h, got 2h"},
		{"http", ":99999", `--http ":99999": want host:port with a port from 0 (a free port) to 65535, such as 127.0.0.1:8080`},
		{"http", "127.0.0.1", `--http "127.0.0.1": want host:port`},
		{"http", "127.0.0.1:-1", `--http "127.0.0.1:-1": want host:port`},
		{"nats-listen", "127.0.0.1:70000", `--nats-listen "127.0.0.1:70000": want host:port with a port from 1 to 65535`},
		{"nats-listen", "0.0.0.0:4222", "--nats-listen 0.0.0.0:4222 is not a loopback address, and the embedded NATS server has no authentication"},
		{"nats-listen", ":4222", "--nats-listen :4222 listens on every interface, and the embedded NATS server has no authentication"},
		{"nats-listen", "192.0.2.1:4222", "Bind it to loopback (--nats-listen 127.0.0.1:4222"},
		{"replicas", "0", "--replicas must be between 1 and 5, got 0"},
		{"replicas", "6", "--replicas must be between 1 and 5, got 6"},
		{"storage", "disk", `--storage must be file or memory, got "disk"`},
		{"scheduler-period", "0s", "--scheduler-period must be between 1ms and 24h, got 0s"},
		{"scheduler-period", "48h", "--scheduler-period must be between 1ms and 24h, got 48h"},
		{"scheduler-initial-delay", "-1s", "--scheduler-initial-delay must be between 0s and 24h, got -1s"},
		{"scheduler-batch", "0", "--scheduler-batch must be between 1 and 10000, got 0"},
		{"scheduler-batch", "10001", "--scheduler-batch must be between 1 and 10000, got 10001"},
		{"scheduler-rate", "0", "--scheduler-rate must be between 0.1 and 100000 records per second, got 0"},
		{"scheduler-concurrency", "0", "--scheduler-concurrency must be between 1 and 256, got 0"},
		{"scheduler-concurrency", "1000", "--scheduler-concurrency must be between 1 and 256, got 1000"},
		{"data-dir", "", "--data-dir must not be empty"},
		{"max-msg-size", "3000000000", `invalid argument "3000000000" for "--max-msg-size"`},
		{"retention", "30m", "--retention must be 0 (keep) or between 1h and 3650d, got 30m"},
		{"retention", "4000d", "--retention must be 0 (keep) or between 1h and 3650d, got 4000d"},
		{"retention", "thirty", `invalid argument "thirty" for "--retention"`},
		{"retention-unrecoverable", "-1h", "--retention-unrecoverable must be 0 (keep) or between 1h and 3650d, got -1h"},
		{"retention-batch", "0", "--retention-batch must be between 1 and 10000, got 0"},
		{"retention-every", "10ms", "--retention-every must be between 1s and 24h, got 10ms"},
		{"archive", "s3:bucket", `--archive: "s3:bucket" must be dir:/path or objectstore:BUCKET`},
		{"archive", "dir:", `--archive: "dir:" must be dir:/path or objectstore:BUCKET`},
		{"instance", "a", "--instance configures the partitioned mode: add --partitions, or drop it"},
		{"partitions-query-timeout", "1s", "--partitions-query-timeout configures the partitioned mode: add --partitions, or drop it"},
	} {
		t.Run(tc.flag+"="+tc.value, func(t *testing.T) {
			dir := t.TempDir()
			base := [][2]string{{"--data-dir", filepath.Join(dir, "data")}, {"--nats-listen", "127.0.0.1:-1"}, {"--http", "127.0.0.1:0"}}
			args := func(extra ...string) []string {
				out := []string{"serve"}
				for _, kv := range base {
					if kv[0] != "--"+tc.flag { // the flag under test comes from elsewhere
						out = append(out, kv[0], kv[1])
					}
				}
				return append(out, extra...)
			}
			check := func(t *testing.T, c *cli, code int, source string) {
				t.Helper()
				stderr := c.stderr.String()
				assert.Equal(t, exitUsage, code, "%s: a bad --%s is a usage error; stderr:\n%s", source, tc.flag, stderr)
				assert.Contains(t, stderr, tc.want, source)
				assert.NotRegexp(t, `\b(natsconn|scheduler|server|jsstore|projection): `, stderr, "%s: no package prefixes", source)
				assert.NotContains(t, stderr, "level=INFO", "%s: nothing starts", source)
				assert.NoDirExists(t, filepath.Join(dir, "data"), "%s: nothing starts", source)
			}

			var c cli
			check(t, &c, c.run(t, args("--"+tc.flag, tc.value)...), "flag")

			if tc.value != "" { // an empty variable counts as unset
				c = cli{env: map[string]string{envName(tc.flag): tc.value}}
				code := c.run(t, args()...)
				if strings.HasPrefix(tc.want, "invalid argument") {
					tc.want = envName(tc.flag) // the variable's own wording
				}
				check(t, &c, code, "environment")
			}

			cfg := filepath.Join(dir, "amends.conf")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.flag+": \""+tc.value+"\"\n"), 0o600))
			c = cli{}
			code := c.run(t, args("--config", cfg)...)
			if tc.value == "" || strings.HasPrefix(tc.want, "invalid argument") || tc.want == envName(tc.flag) {
				assert.Equal(t, exitUsage, code, "config file: stderr:\n%s", c.stderr.String())
				return
			}
			check(t, &c, code, "config file")
		})
	}
}

func TestServeLogsJSON(t *testing.T) {
	c := cli{env: map[string]string{"AMENDS_LOG_FORMAT": "json"}}
	r := c.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1")
	require.Equal(t, exitOK, r.stop(t), "stderr:\n%s", c.stderr.String())
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	require.NotEmpty(t, lines)
	var msgs []string
	for _, line := range lines {
		var rec struct{ Time, Level, Msg string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "every log line is a JSON object: %q", line)
		assert.NotEmpty(t, rec.Time, line)
		assert.NotEmpty(t, rec.Level, line)
		msgs = append(msgs, rec.Msg)
	}
	assert.Contains(t, msgs, "amends serving; stop with SIGINT or SIGTERM")
	assert.Contains(t, msgs, "amends stopped")
}

func TestServeFailureLogsJSON(t *testing.T) {
	var c cli
	code := c.run(t, "--log-format", "json", "serve", "--replicas", "0")
	assert.Equal(t, exitUsage, code)
	var rec struct {
		Level, Msg string
		ExitCode   int `json:"exit_code"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(c.stderr.String())), &rec), "the error is one JSON object: %q", c.stderr.String())
	assert.Equal(t, "ERROR", rec.Level)
	assert.Equal(t, "amends: --replicas must be between 1 and 5, got 0", rec.Msg)
	assert.Equal(t, exitUsage, rec.ExitCode)
}

func TestLogFormatMustBeTextOrJSON(t *testing.T) {
	for _, cmd := range []string{"serve", "demo"} {
		var c cli
		code := c.run(t, cmd, "--log-format", "xml")
		assert.Equal(t, exitUsage, code, "%s: stderr:\n%s", cmd, c.stderr.String())
		assert.Contains(t, c.stderr.String(), `--log-format "xml": want text or json`, cmd)
	}
}

// TestServeSettingsThatConflictWithTheStore restarts serve on one data
// directory with settings that its stream or lease bucket cannot take: the
// error names the flags and no package's sentinel.
func TestServeSettingsThatConflictWithTheStore(t *testing.T) {
	dir := t.TempDir()
	var first cli
	r := first.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1")
	require.Equal(t, exitOK, r.stop(t), first.stderr.String())

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-msg-size", "2048"}, "(--storage, --replicas and --max-msg-size must match the existing stream): stream AMENDS_compensation exists with max message size 1048576 (wanted 2048)"},
	} {
		var c cli
		code := c.run(t, append([]string{"serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--http", "127.0.0.1:0"}, tc.args...)...)
		stderr := c.stderr.String()
		assert.Equal(t, exitFailure, code, "%v: stderr:\n%s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.NotRegexp(t, `(jsstore|scheduler): (incompatible|invalid)`, stderr, tc.args)
	}
}

// Finding 11: a lease bucket created with another TTL stopped serve from
// starting, with advice (nats kv del … while no serve runs) that the
// embedded server leaves no way to follow. serve starts, schedules with
// the bucket's TTL (so every instance agrees), /readyz reports the
// mismatch and the flag that repairs it, and --repair-buckets does.
func TestServeLeaseBucketOfAnotherTTL(t *testing.T) {
	dir := t.TempDir()
	var first cli
	r := first.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1")
	require.Equal(t, exitOK, r.stop(t), first.stderr.String())

	var c cli
	r = c.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--lease-ttl", "10s")
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.info.HTTPURL + "/readyz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "bucket settings differ")
	}, waitLimit, 10*time.Millisecond, "/readyz reports the mismatch")
	assert.Contains(t, body, "--repair-buckets")
	assert.Contains(t, body, "ttl 30s (wanted 10s)")
	assert.NotContains(t, body, "nats kv del")
	require.Equal(t, exitOK, r.stop(t), c.stderr.String())

	var fixed cli
	r = fixed.startServe(t, "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:-1", "--lease-ttl", "10s", "--repair-buckets")
	require.Eventually(t, func() bool {
		resp, err := http.Get(r.info.HTTPURL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, waitLimit, 10*time.Millisecond, "ready once repaired")
	assert.Contains(t, fixed.stderr.String(), "--repair-buckets: bucket repaired")
	require.Equal(t, exitOK, r.stop(t), fixed.stderr.String())
}

func TestServeRefusesABadNATSURL(t *testing.T) {
	for _, url := range []string{"nats://127.0.0.1:99999", "http://127.0.0.1:4222"} {
		var c cli
		code := c.run(t, "serve", "--nats-url", url, "--http", "127.0.0.1:0")
		assert.Equal(t, exitUsage, code, "%s: stderr:\n%s", url, c.stderr.String())
		assert.Contains(t, c.stderr.String(), "amends: --nats-url: NATS URL "+url+" has the", url)
		assert.NotContains(t, c.stderr.String(), "natsconn", url)
	}
}
