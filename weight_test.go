package amends_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sourceFile is one non-test Go file of the module, parsed.
type sourceFile struct {
	path  string // slash-separated, relative to the module root
	file  *ast.File
	lines int
}

// sources parses the module's non-test Go files, leaving out the example
// modules (examples/, their own go.mod) and testdata.
func sources(t *testing.T) []sourceFile {
	t.Helper()
	var out []sourceFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "examples" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, sourceFile{path: filepath.ToSlash(p), file: f, lines: fset.Position(f.FileEnd).Line})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(out), 100, "the module's files were read")
	return out
}

// documentedAliases are the alias declarations of another package's type
// that stay, each for the reason docs/architecture.md gives.
var documentedAliases = []string{
	"natsembed/natsembed.go Config",  // the public name of an internal type
	"processor/hold.go holds",        // an unexported short name of kvstore.Store[api.Hold]
	"processor/replayreq.go replays", // an unexported short name of kvstore.Store[api.Replay]
}

// One type has one name: no package re-exports another's type under an
// alias, beyond the documented few.
func TestNoAliasOfAnotherPackagesType(t *testing.T) {
	var found []string
	for _, s := range sources(t) {
		for _, d := range s.file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Assign == 0 {
					continue
				}
				x := ts.Type
				if ix, ok := x.(*ast.IndexExpr); ok {
					x = ix.X
				}
				if _, ok := x.(*ast.SelectorExpr); ok {
					found = append(found, s.path+" "+ts.Name.Name)
				}
			}
		}
	}
	slices.Sort(found)
	require.Equal(t, documentedAliases, found, "alias declarations of another package's type")
}

// maxFileLines bounds a non-test file: past it a file holds more than one
// thing and a reader loses the thread.
const maxFileLines = 450

// No non-test file is longer than maxFileLines.
func TestNoFileIsTooLong(t *testing.T) {
	for _, s := range sources(t) {
		if s.lines > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it where a reader would", s.path, s.lines, maxFileLines)
		}
	}
}
