package amends_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/amends-dev/amends"

// folder is the folder of a package of the module, for the layer check:
// its first path element, except that internal/X and cmd/X are folders of
// their own.
func folder(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	if rel == "" {
		return "."
	}
	parts := strings.Split(rel, "/")
	if (parts[0] == "internal" || parts[0] == "cmd") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// folderGraph is the module's non-test imports between folders (go list),
// each edge with one package import that makes it.
func folderGraph(t *testing.T) map[string]map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	g := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		from := folder(f[0])
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module+"/") && imp != module {
				continue
			}
			to := folder(imp)
			if to == from {
				continue
			}
			if g[from] == nil {
				g[from] = map[string]string{}
			}
			g[from][to] = strings.TrimPrefix(f[0], module+"/") + " imports " + strings.TrimPrefix(imp, module+"/")
		}
	}
	return g
}

// loops returns the strongly connected groups of more than one folder
// (Tarjan), each sorted.
func loops(g map[string]map[string]string) [][]string {
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	n := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		on[v] = true
		for _, w := range slices.Sorted(maps.Keys(g[v])) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var c []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				c = append(c, w)
				if w == v {
					break
				}
			}
			if len(c) > 1 {
				slices.Sort(c)
				out = append(out, c)
			}
		}
	}
	for _, v := range slices.Sorted(maps.Keys(g)) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// The folders are layers: no two folders import each other, directly or
// through others (internal/X and cmd/X count as folders of their own).
// A loop names the imports that close it.
func TestNoImportLoopBetweenFolders(t *testing.T) {
	g := folderGraph(t)
	require.NotEmpty(t, g["cmd/amends"], "the graph has the CLI's imports")
	for _, c := range loops(g) {
		var why []string
		for _, a := range c {
			for _, b := range c {
				if imp, ok := g[a][b]; ok {
					why = append(why, imp)
				}
			}
		}
		t.Errorf("the folders %v import each other: %s", c, strings.Join(why, "; "))
	}
}

// The loop finder finds a loop through three folders, and none in a tree.
func TestLoopsFindsAFolderLoop(t *testing.T) {
	g := map[string]map[string]string{"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}, "d": {"a": ""}}
	require.Equal(t, [][]string{{"a", "b", "c"}}, loops(g))
	delete(g["c"], "a")
	require.Empty(t, loops(g))
}

// internal/ sits below everything: its packages import no public package
// of the module (what would import back up, such as the benchmarks,
// lives beside its one user, in cmd/amends/internal).
func TestInternalIsOnlyBelow(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/internal/...").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		checked++
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"/") && !strings.HasPrefix(imp, module+"/internal/") {
				t.Errorf("%s imports %s, above it", strings.TrimPrefix(f[0], module+"/"), strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	require.Greater(t, checked, 10, "the internal packages were listed")
}
