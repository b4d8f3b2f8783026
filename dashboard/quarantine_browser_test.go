package dashboard_test

import (
	"errors"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The overview shows the newest quarantined entries: a bucket's entry
// that does not validate with its bucket, key and why.
func TestBrowserOverviewShowsTheQuarantine(t *testing.T) {
	needBrowser(t)
	s := newStack(t, 1, 0, false)
	ctx := tab(t)
	do(t, ctx, "open the overview", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "an empty quarantine says so", `document.querySelector('#quarantine')?.textContent.includes("Nothing quarantined")`)
	require.NoError(t, s.quar.RecordKV(t.Context(), "amends_rules", "r-ü", 7, errors.New("bucket amends_rules key r-ü revision 7: key: not a rule id")))
	do(t, ctx, "reload", chromedp.Navigate(s.http.URL+"/"))
	until(t, ctx, "the entry is listed", `document.querySelectorAll('#quarantine-table tbody tr').length === 1`)
	row := text(t, ctx, "#quarantine-table tbody tr")
	assert.Contains(t, row, "bucket amends_rules")
	assert.Contains(t, row, "r-ü")
	assert.Contains(t, row, "invalid_entry")
	assert.Contains(t, row, "not a rule id")
	assert.Contains(t, text(t, ctx, "#quar-n"), "1 entries")
}
