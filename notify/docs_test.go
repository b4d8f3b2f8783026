package notify

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// block returns the fenced block of language lang after heading in doc.
func block(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	require.GreaterOrEqual(t, i, 0, "docs/notifications.md has no %q", heading)
	rest := doc[i:]
	j := strings.Index(rest, "```"+lang+"\n")
	require.GreaterOrEqual(t, j, 0, "no %s block after %q", lang, heading)
	rest = rest[j+len("```"+lang+"\n"):]
	k := strings.Index(rest, "```")
	require.GreaterOrEqual(t, k, 0)
	return rest[:k]
}

func TestDocsGoSnippetIsTheTestedOne(t *testing.T) {
	doc, err := os.ReadFile("../docs/notifications.md")
	require.NoError(t, err)
	ex, err := os.ReadFile("example_verify_test.go")
	require.NoError(t, err)
	assert.Contains(t, string(ex), block(t, string(doc), "### Go", "go"), "the doc's Go verifier must be the one Example_verifyWebhook checks")
}

func TestDocsShellSnippetVerifies(t *testing.T) {
	for _, tool := range []string{"sh", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	doc, err := os.ReadFile("../docs/notifications.md")
	require.NoError(t, err)
	dir := t.TempDir()
	script := filepath.Join(dir, "verify.sh")
	require.NoError(t, os.WriteFile(script, []byte(block(t, string(doc), "### Shell (openssl)", "sh")), 0o700))

	secret := "doc-secret-0123456789"
	body := []byte(`{"id":"n1","type":"created"}`)
	now := time.Now().Unix()
	hash := BodyHash(body)
	sigs := Sign([]byte("old-secret-0123456789"), "POST", "/hooks/amends", "team=ops", now, "n1", hash) + ", " +
		Sign([]byte(secret), "POST", "/hooks/amends", "team=ops", now, "n1", hash)
	headers := fmt.Sprintf("POST /hooks/amends?team=ops HTTP/1.1\r\nAmends-Event-Id: n1\r\nAmends-Timestamp: %d\r\nAmends-Body-Sha256: %s\r\nAmends-Signature: %s\r\n", now, hash, sigs)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "headers.txt"), []byte(headers), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600))
	run := func(secret string) string {
		cmd := exec.CommandContext(t.Context(), "sh", script, "POST", "/hooks/amends", "team=ops", "headers.txt", "body.json")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "AMENDS_WEBHOOK_SECRET="+secret)
		out, _ := cmd.CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	assert.Equal(t, "valid", run(secret), "the second of two signatures matches")
	assert.Equal(t, "bad signature", run("wrong-secret-0123456789"))
	stale := strings.Replace(headers, fmt.Sprintf("Timestamp: %d", now), fmt.Sprintf("Timestamp: %d", now-600), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "headers.txt"), []byte(stale), 0o600))
	assert.Equal(t, "stale timestamp", run(secret))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "headers.txt"), []byte(headers), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "body.json"), append(body, ' '), 0o600))
	assert.Equal(t, "body changed", run(secret))
}
