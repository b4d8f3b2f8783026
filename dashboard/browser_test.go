package dashboard_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Regenerate the screenshots in docs/ with
//
//	go test ./dashboard/ -run Browser -update-screenshots
var updateScreenshots = flag.Bool("update-screenshots", false, "write the dashboard screenshots to docs/")

// browser is one headless chromium shared by the test binary; each test
// gets its own tab.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// needBrowser returns the browser's path; without one it skips the test
// loudly, or fails it when CI=true.
func needBrowser(t *testing.T) string {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		msg := "NO BROWSER: chromium is not installed, so the dashboard's browser tests DID NOT RUN; install it with `apt-get install -y chromium` (or set CHROMIUM)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		fmt.Fprintln(os.Stderr, "WARNING: "+msg)
		t.Skip(msg)
	}
	return path
}

// chromiumPath finds Debian's chromium (or $CHROMIUM).
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return ""
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// tab returns a new browser tab, 1280×900, that fails the test on an
// uncaught JavaScript exception. Without a browser the test is skipped
// loudly, or fails when CI=true.
func tab(t *testing.T) context.Context {
	t.Helper()
	path := needBrowser(t)
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		browser.ctx = bctx
		browser.cancel = func() { bcancel(); acancel() }
		// The first run starts the browser; it lives as long as bctx.
		browser.err = chromedp.Do(bctx)
	})
	require.NoError(t, browser.err, "start chromium at %s", path)
	var mu sync.Mutex
	var exceptions []string
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			d := e.ExceptionDetails
			msg := fmt.Sprintf("%s at %s:%d", d.Text, d.URL, d.LineNumber+1)
			if d.Exception != nil {
				msg += ": " + d.Exception.Description
			}
			exceptions = append(exceptions, msg)
			mu.Unlock()
		}
	}))
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
	t.Cleanup(func() {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("uncaught JavaScript exception: %s", e)
		}
	})
	// Every step below runs within a generous deadline derived after the
	// first run.
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(tcancel)
	return tctx
}

// do runs steps, failing the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...), what)
}

// text returns the text of the first node matching sel, once visible.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	do(t, ctx, "wait for "+sel, chromedp.WaitVisible(sel))
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	require.NoError(t, err, "text of %s", sel)
	return strings.TrimSpace(s)
}

// until polls the page until the JavaScript predicate holds, through
// navigations (an evaluation that fails while a page loads is retried).
// On timeout it fails with the page's URL and text.
func until(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+predicate+")"))
		if err == nil && ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("wait until %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	t.Fatalf("wait until %s (%s): timed out after 30s (last error %v); the page:\n%s", what, predicate, last, page)
}

// eval evaluates a JavaScript expression (a promise is awaited).
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(t, err, "evaluate %s", expr)
	return v
}

// screenshot writes the page to docs/name with -update-screenshots.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*updateScreenshots {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("..", "docs", name), png, 0o644))
}
