package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no command", nil, nil, "a command is required"},
		{"unknown command", []string{"serv"}, nil, `unknown command "serv" for "amends"; did you mean serve?`},
		{"unknown flag", []string{"serve", "--data-dri", "x"}, nil, "unknown flag: --data-dri"},
		{"unknown root flag", []string{"--verbose", "serve"}, nil, "unknown flag: --verbose"},
		{"flag without value", []string{"serve", "--replicas"}, nil, "flag needs an argument: --replicas"},
		{"flag of wrong type", []string{"serve", "--replicas", "three"}, nil, `invalid argument "three" for "--replicas" flag`},
		{"argument", []string{"serve", "now"}, nil, `amends serve takes no arguments, got ["now"]`},
		{"zero replicas", []string{"serve", "--replicas", "0"}, nil, "--replicas must be between 1 and 5, got 0"},
		{"six replicas", []string{"serve", "--nats-url", "nats://x", "--replicas", "6"}, nil, "--replicas must be between 1 and 5, got 6"},
		{"replicas on embedded", []string{"serve", "--replicas", "3"}, nil, "--replicas 3 needs a NATS cluster"},
		{"storage", []string{"serve", "--storage", "disk"}, nil, `--storage must be file or memory, got "disk"`},
		{"max msg size", []string{"serve", "--max-msg-size", "10"}, nil, "--max-msg-size must be between 1024 and 67108864 bytes (64 MiB is the largest max_payload of a NATS server), got 10"},
		{"listen without port", []string{"serve", "--nats-listen", "localhost"}, nil, `--nats-listen "localhost": want host:port`},
		{"listen port range", []string{"serve", "--nats-listen", "127.0.0.1:70000"}, nil, `--nats-listen "127.0.0.1:70000"`},
		{"empty data dir", []string{"serve", "--data-dir", ""}, nil, "--data-dir must not be empty"},
		{"embedded flag with url", []string{"serve", "--nats-url", "nats://x", "--sync-always"}, nil, "--sync-always configures the embedded server"},
		{"client flag without url", []string{"serve", "--nats-creds", "x.creds"}, nil, "--nats-creds configures the connection to --nats-url"},
		{"log level", []string{"--log-level", "loud", "serve"}, nil, `--log-level "loud"`},
		{"bad env value", []string{"serve"}, map[string]string{"AMENDS_REPLICAS": "many"}, `environment variable AMENDS_REPLICAS="many" is not a valid value for --replicas`},
		{"bad env bool", []string{"serve"}, map[string]string{"AMENDS_SYNC_ALWAYS": "maybe"}, "environment variable AMENDS_SYNC_ALWAYS"},
		{"env rule", []string{"serve"}, map[string]string{"AMENDS_REPLICAS": "0"}, "--replicas must be between 1 and 5, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cli{env: tc.env}
			code := c.run(t, tc.args...)
			assert.Equal(t, exitUsage, code, "stderr:\n%s", c.stderr.String())
			assert.Contains(t, c.stderr.String(), tc.want)
			assert.Contains(t, c.stderr.String(), "--help' for usage.")
		})
	}
}

func TestHelpShowsDefaultsAndEnvironment(t *testing.T) {
	var c cli
	assert.Equal(t, exitOK, c.run(t, "serve", "--help"))
	help := c.stdout.String()
	for _, want := range []string{
		`--data-dir string`, `(default "./amends-data")`, `(default "127.0.0.1:4222")`, `(default "file")`, `(default 1)`,
		"[$AMENDS_DATA_DIR]", "[$AMENDS_NATS_URL]", "[$AMENDS_NATS_TLS_CERT]", "[$AMENDS_LOG_LEVEL]",
		"A flag on the command line\nwins over its variable",
		"--sync-always", "--replicas 3",
	} {
		assert.Contains(t, help, want)
	}
	assert.Empty(t, c.stderr.String())
	assert.False(t, strings.Contains(help, "[$AMENDS_HELP]"), "help has no variable")
}

func TestEnvName(t *testing.T) {
	assert.Equal(t, "AMENDS_DATA_DIR", envName("data-dir"))
	assert.Equal(t, "AMENDS_NATS_TLS_CA", envName("nats-tls-ca"))
	assert.Equal(t, "AMENDS_STORAGE", envName("storage"))
}
