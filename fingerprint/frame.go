package fingerprint

import (
	"strings"
)

// Frame returns the first function of stack whose package lies in module
// (its import path is module or starts with module + "/"), without
// arguments or line, or "" if none does. An empty module takes the first
// function outside the standard library, the runtime and
// github.com/cockroachdb/errors. It reads at most MaxInput bytes of stack
// and understands Go's goroutine dumps ("pkg.Func(args)" then a tab and
// "file:line") and the %+v rendering of cockroachdb/errors ("  | pkg.Func"
// then "  | \tfile:line").
func Frame(stack, module string) string {
	for line := range strings.Lines(cut(stack)) {
		line = strings.TrimRight(line, "\r\n")
		line = strings.TrimLeft(line, " ")
		if rest, ok := strings.CutPrefix(line, "|"); ok {
			line = strings.TrimPrefix(rest, " ")
		}
		if line == "" || line[0] == '\t' || strings.HasPrefix(line, "goroutine ") || strings.ContainsAny(line, " :") && !strings.Contains(line, "(") {
			continue
		}
		fn := function(line)
		if fn == "" || !inModule(fn, module) {
			continue
		}
		return fn
	}
	return ""
}

// function returns the function a frame line names: "pkg/path.Func" or
// "pkg/path.(*T).Method", without "(args)" and " +0x.." suffixes; "" if
// the line names none.
func function(line string) string {
	if i := strings.LastIndex(line, " +0x"); i >= 0 {
		line = line[:i]
	}
	if strings.HasSuffix(line, ")") {
		if i := strings.LastIndex(line, "("); i > 0 && !strings.HasSuffix(line[:i], ".") {
			line = line[:i]
		}
	}
	if strings.ContainsAny(line, " \t") || !strings.Contains(line, ".") {
		return ""
	}
	return line
}

// inModule reports whether function fn belongs to module (see Frame).
func inModule(fn, module string) bool {
	pkg := packageOf(fn)
	if module != "" {
		return pkg == module || strings.HasPrefix(pkg, module+"/")
	}
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") { // the standard library and the runtime
		return false
	}
	return pkg != "github.com/cockroachdb/errors" && !strings.HasPrefix(pkg, "github.com/cockroachdb/errors/")
}

// packageOf returns the import path of function fn: up to the first dot
// after the last slash.
func packageOf(fn string) string {
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}
