package jsstore_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeHeaders are the names of the headers the store keeps on its
// messages. Only eventstore/jsstore may read them; everyone else gets
// typed values (Stream.Seq, Stream.PrevSeq, Stream.Version,
// Stream.TraceParent) from the store.
var storeHeaders = map[string]bool{
	"HeaderVersion": true, "HeaderPrevSeqs": true, "HeaderFirstSeq": true,
	"Amends-Version": true, "Amends-Prev-Seqs": true, "Amends-First-Seq": true,
}

// TestNoStoreHeaderReadsOutsideTheStore scans the module's non-test Go
// files outside eventstore/ for a use of a store header (the jsstore
// constant or its literal name) other than as the key of a Set call: code
// that writes a message as Append would (the benchmarks' raw publishers)
// may name them, code that reads a consumed message may not.
func TestNoStoreHeaderReadsOutsideTheStore(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var found []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == "eventstore" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		found = append(found, headerReads(fset, f)...)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "the scan reads the module's files")
	assert.Empty(t, found, "packages outside eventstore read the store's message headers; add a typed value to eventstore.Stream (as PrevSeq) instead")
}

// headerReads lists the places in f that name a store header outside the
// key of a Set call.
func headerReads(fset *token.FileSet, f *ast.File) []string {
	allowed := map[ast.Node]bool{}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Set" && len(n.Args) == 2 {
				allowed[n.Args[0]] = true
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == "jsstore" && storeHeaders[n.Sel.Name] && !allowed[n] {
				out = append(out, fset.Position(n.Pos()).String()+": jsstore."+n.Sel.Name)
			}
			return true
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && storeHeaders[s] && !allowed[n] {
				out = append(out, fset.Position(n.Pos()).String()+": "+n.Value)
			}
		}
		return true
	})
	return out
}

func TestHeaderReadsIsNotBlind(t *testing.T) {
	src := `package p
func f(m msg, h hdr) {
	h.Set(jsstore.HeaderVersion, "1")
	h.Set("Amends-Version", "1")
	_ = m.Headers().Get(jsstore.HeaderPrevSeqs)
	_ = h["Amends-First-Seq"]
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	got := headerReads(fset, f)
	assert.Len(t, got, 2, "the two reads are found and the two writes allowed: %v", got)
}
