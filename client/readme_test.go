package client_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's client snippet is the body of Example, so it compiles.
func TestReadmeShowsTheExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	body := between(t, string(src), "func Example() {\n", "\n}\n")
	var lines []string
	for l := range strings.SplitSeq(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	block := between(t, string(readme), "<!-- client/example_test.go Example -->\n```go\n", "\n```\n")
	assert.Equal(t, strings.Join(lines, "\n"), block, "README.md's client snippet differs from Example in client/example_test.go")
}

func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	require.GreaterOrEqual(t, i, 0, "marker %q not found", start)
	s = s[i+len(start):]
	j := strings.Index(s, end)
	require.GreaterOrEqual(t, j, 0, "marker %q not found", end)
	return s[:j]
}
