package amends_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
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

// cyclomatic is a function's cyclomatic complexity as gocyclo counts it:
// one, plus one per if, for, range, non-default case and select case, &&
// and ||, the function literals inside it included.
func cyclomatic(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if x.List != nil {
				c++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// maxComplex bounds the non-test functions above cyclomatic 15: the
// validators and scanners that read best as one table or one loop.
const maxComplex = 40

// At most maxComplex non-test functions are above cyclomatic 15; the
// message lists the heaviest, where a split helps a reader most.
func TestFewComplexFunctions(t *testing.T) {
	type fn struct {
		name string
		c    int
	}
	var heavy []fn
	for _, s := range sources(t) {
		for _, d := range s.file.Decls {
			if f, ok := d.(*ast.FuncDecl); ok {
				if c := cyclomatic(f); c > 15 {
					heavy = append(heavy, fn{s.path + ":" + f.Name.Name, c})
				}
			}
		}
	}
	slices.SortFunc(heavy, func(a, b fn) int { return b.c - a.c })
	if len(heavy) > maxComplex {
		t.Errorf("%d non-test functions are above cyclomatic 15, more than %d: %v", len(heavy), maxComplex, heavy)
	}
}

// The counter counts as gocyclo does.
func TestCyclomaticCounts(t *testing.T) {
	src := `package p
func f(a, b bool, xs []int, ch chan int) {
	if a && b || !a {
	}
	for _, x := range xs {
		switch x {
		case 1, 2:
		default:
		}
	}
	select {
	case <-ch:
	default:
	}
	_ = func() { for {} }
}`
	file, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	require.NoError(t, err)
	// 1 + if + && + || + range + case + select case + for = 8
	require.Equal(t, 8, cyclomatic(file.Decls[0].(*ast.FuncDecl)))
}

// maxDocLines bounds a package's doc comment: a contract, about 80 lines;
// the manual belongs in docs/.
const maxDocLines = 90

// Every package doc is a contract of at most maxDocLines lines.
func TestPackageDocsAreContracts(t *testing.T) {
	fset := token.NewFileSet()
	for _, s := range sources(t) {
		if s.file.Doc == nil {
			continue
		}
		f, err := parser.ParseFile(fset, s.path, nil, parser.ParseComments|parser.PackageClauseOnly)
		require.NoError(t, err)
		if n := fset.Position(f.Doc.End()).Line - fset.Position(f.Doc.Pos()).Line + 1; n > maxDocLines {
			t.Errorf("%s: the package doc has %d lines, more than %d; move the manual to docs/", s.path, n, maxDocLines)
		}
	}
}

// Every bucket-backed store runs the store conformance suite: a package
// that makes a kvstore.Store of n codecs calls kvstoretest.Run n times
// in its tests at least.
func TestEveryStoreRunsTheConformanceSuite(t *testing.T) {
	codecs := map[string]map[string]bool{} // package dir -> codec names
	for _, s := range sources(t) {
		ast.Inspect(s.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "For" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "kvstore" {
				return true
			}
			dir := filepath.ToSlash(filepath.Dir(s.path))
			if codecs[dir] == nil {
				codecs[dir] = map[string]bool{}
			}
			codecs[dir][exprName(call.Args[1])] = true
			return true
		})
	}
	require.GreaterOrEqual(t, len(codecs), 9, "the stores were found")
	for dir, names := range codecs {
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		runs := 0
		for _, p := range tests {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			runs += strings.Count(string(b), "kvstoretest.Run(")
		}
		if runs < len(names) {
			t.Errorf("%s makes stores of %d codecs (%s) and its tests run the conformance suite %d times; run kvstoretest.Run for each",
				dir, len(names), strings.Join(slices.Sorted(maps.Keys(names)), ", "), runs)
		}
	}
}

// exprName names a codec for a message: its identifier.
func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "an expression"
}
