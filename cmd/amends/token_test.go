package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/server"
)

// token new prints a secret once and a line that holds only its hash; the
// line parses back to a token that the secret authenticates.
func TestTokenNewPrintsTheSecretOnceAndAHashedLine(t *testing.T) {
	var c cli
	require.Equal(t, exitOK, c.run(t, "token", "new", "bob", "operator", "--expires", "720h"), c.stderr.String())
	out := c.stdout.String()
	m := regexp.MustCompile(`(?m)^secret: (amends_[A-Za-z0-9_-]{43})\nline: (.+)\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, "output: %q", out)
	secret, line := m[1], m[2]
	assert.NotContains(t, line, secret, "the line holds no secret")
	assert.NotContains(t, c.stderr.String(), secret, "the secret is on stdout only")
	tokens, err := server.ParseTokens(line)
	require.NoError(t, err)
	require.Len(t, tokens, 1)
	assert.Equal(t, "bob", tokens[0].Name)
	assert.Equal(t, server.RoleOperator, tokens[0].Role)
	assert.True(t, tokens[0].Hashed())
	assert.Equal(t, time.UnixMilli(t0).Add(720*time.Hour).UTC().Truncate(time.Second), tokens[0].Expires)
	assert.Equal(t, server.HashSecret(secret), strings.Fields(strings.SplitN(line, ":", 3)[2])[0])

	// Two runs make two secrets.
	var c2 cli
	require.Equal(t, exitOK, c2.run(t, "token", "new", "bob", "operator"))
	assert.NotContains(t, c2.stdout.String(), secret)
}

func TestTokenHashReadsTheSecretFromAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte("an-old-plaintext-secret\n"), 0o600))
	var c cli
	require.Equal(t, exitOK, c.run(t, "token", "hash", "alice", "viewer", "--secret-file", file, "--expires", "2027-01-31"), c.stderr.String())
	assert.Equal(t, "line: alice:viewer:"+server.HashSecret("an-old-plaintext-secret")+" expires=2027-01-31T00:00:00Z\n", c.stdout.String())

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "new", "bob", "admin"}, "ROLE must be viewer or operator"},
		{[]string{"token", "new", "bo:b", "viewer"}, "NAME"},
		{[]string{"token", "new", "bob", "viewer", "--expires", "soon"}, "--expires"},
		{[]string{"token", "new", "bob", "viewer", "--expires", "-1h"}, "in the future"},
		{[]string{"token", "hash", "bob", "viewer"}, "--secret-file"},
		{[]string{"token", "new", "bob"}, "accepts 2 arg"},
	} {
		var c cli
		code := c.run(t, tc.args...)
		assert.NotEqual(t, exitOK, code, "%v", tc.args)
		assert.Contains(t, c.stderr.String(), tc.want, "%v", tc.args)
	}
	short := filepath.Join(t.TempDir(), "short")
	require.NoError(t, os.WriteFile(short, []byte("short\n"), 0o600))
	var c3 cli
	assert.Equal(t, exitUsage, c3.run(t, "token", "hash", "bob", "viewer", "--secret-file", short))
	assert.Contains(t, c3.stderr.String(), "at least 16")
}
