package amends_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every test the documents name as the proof of a claim exists, so that a
// claim cannot outlive the test that showed it (docs/security.md names
// one for each).
func TestEveryTestTheDocsNameExists(t *testing.T) {
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)\w*)\(`)
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	}))
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Z]\\w*)`")
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	docs = append(docs, "README.md")
	cited := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range named.FindAllSubmatch(b, -1) {
			cited++
			assert.True(t, defined[string(m[1])], "%s names %s, which no test defines", doc, m[1])
		}
	}
	assert.Greater(t, cited, 50, "the docs name their tests")
}
