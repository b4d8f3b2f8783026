package main

import (
	"strings"
	"testing"
)

// clientCommands are the subcommands that talk to the API.
var clientCommands = []string{"list", "summary", "show", "history", "prepare", "force-prepare", "retry-spec", "mark-recoverable", "change-function"}

// FuzzClientArgs runs the client subcommands with fuzzed arguments against
// no server: the command line must never panic or hang, and must exit 0,
// 1 or 2, with a message unless it succeeded.
func FuzzClientArgs(f *testing.F) {
	for _, seed := range []string{
		"", "--limit\x000", "--view\x00bogus", "--since\x00yesterday", "some-id", "a\x00b",
		"--filter\x00colour=red", "--processor\x00Mailer\x00--yes", "--processor\x00Mailer\x00--dry-run\x00--rate\x00NaN",
		"id\x00--max-retries\x00-1\x00--min-backoff\x001\x00--execution-timeout\x001", "id\x00RECOVERABLE", "-o\x00yaml", "--help",
		"id\x00--kind\x00EVENT\x00--context\x00c\x00--processor\x00p\x00--name\x00n\x00--reason\x00r", "--limit=-1", "-ojson",
	} {
		for i := range clientCommands {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, sub uint8, raw string) {
		args := []string{clientCommands[int(sub)%len(clientCommands)]}
		if raw != "" {
			args = append(args, strings.Split(raw, "\x00")...)
		}
		for _, a := range args {
			// Keep the run against the refusing address below, fast.
			if strings.Contains(a, "server") || strings.Contains(a, "timeout") || a == "--" {
				return
			}
		}
		c := &cli{env: map[string]string{"AMENDS_SERVER": "http://127.0.0.1:1", "AMENDS_TIMEOUT": "5s"}}
		code := c.runWithin(t, args...)
		stderr := c.stderr.String()
		switch code {
		case exitOK:
		case exitFailure, exitUsage:
			if !strings.HasPrefix(stderr, "amends: ") || len(strings.TrimSpace(stderr)) <= len("amends:") {
				t.Fatalf("amends %q exited %d without a message: %q", args, code, stderr)
			}
		default:
			t.Fatalf("amends %q exited %d: %s", args, code, stderr)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") || strings.Contains(stderr, "strconv.") {
			t.Fatalf("amends %q: %s", args, stderr)
		}
	})
}
