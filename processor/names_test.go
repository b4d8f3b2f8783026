package processor_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The naming rule of options: the processor's options (Option, given to
// New) start with With; a function's (FunctionOption, given to Register)
// read as a phrase about it and do not, but for the deprecated names kept
// for one release.
func TestOptionNamesFollowTheRule(t *testing.T) {
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	seen := map[string]int{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			res, ok := fn.Type.Results.List[0].Type.(*ast.Ident)
			if !ok {
				continue
			}
			name, with := fn.Name.Name, strings.HasPrefix(fn.Name.Name, "With")
			deprecated := fn.Doc != nil && strings.Contains(fn.Doc.Text(), "Deprecated:")
			switch res.Name {
			case "Option":
				seen[res.Name]++
				assert.True(t, with, "%s is a processor option: its name starts with With", name)
			case "FunctionOption":
				seen[res.Name]++
				assert.True(t, !with || deprecated, "%s is a function's option: its name reads as a phrase about the function, without With", name)
			}
		}
	}
	assert.Greater(t, seen["Option"], 20, "the processor's options were found")
	assert.Greater(t, seen["FunctionOption"], 5, "the functions' options were found")
}
