package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

// What each leaf command of the tree does, for the one confirmation rule:
// readOnly commands change nothing (the test runs each and sees no write
// reach the API), local ones never reach a server's state (they run their
// own server, print, or sign), every other one changes state and must
// have --yes and --dry-run. A new command is in none of these lists and
// fails the test until it is classified.
var (
	readOnlyCommands = []string{
		"amends list", "amends show", "amends history", "amends summary", "amends quarantine list",
		"amends holds list", "amends rules list", "amends audit", "amends circuits list", "amends circuits show",
		"amends drains list", "amends archive list", "amends archive show",
	}
	localCommands = []string{
		"amends serve", "amends demo", "amends bench", "amends bench footprint", "amends bench storm", "amends bench partitions",
		"amends token new", "amends token hash", "amends notify verify", "amends notify test",
	}
	// confirmedCommands change much or lose something: they refuse to run
	// without --dry-run or --yes. The other state-changing commands change
	// one record, audited in its history, and take both flags so that
	// scripts may say them everywhere.
	confirmedCommands = []string{
		"amends holds release", "amends holds skip", "amends replay", "amends rules apply", "amends rules remove",
		"amends circuits open", "amends circuits close", "amends repair purge-entry", "amends repair skip-message",
		"amends archive restore",
	}
	// idWords are the words of a command's use that name an id argument.
	idWords = regexp.MustCompile(`\b(ID|\[ID\]|RULE|EVENT_ID)\b`)
)

func leaves(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() || c.Flags().Lookup("output") != nil {
			out = append(out, c)
		}
		for _, s := range c.Commands() {
			if s.Name() != "help" && s.Name() != "completion" {
				walk(s)
			}
		}
	}
	walk(root)
	return out
}

// The command tree follows one rule for confirmation, ids and output:
// every command that changes state has --yes and --dry-run; every command
// that takes an id says so and takes a unique prefix; every command with
// -o says whether it prints a list or a document.
func TestTheCommandTreeFollowsOneRule(t *testing.T) {
	root := newRootCmd(&app{})
	checked := 0
	for _, c := range leaves(root) {
		path := c.CommandPath()
		t.Run(path, func(t *testing.T) {
			checked++
			readOnly, local := slices.Contains(readOnlyCommands, path), slices.Contains(localCommands, path)
			if !readOnly && !local {
				assert.NotNil(t, c.Flags().Lookup("yes"), "%s changes state: it needs --yes", path)
				assert.NotNil(t, c.Flags().Lookup("dry-run"), "%s changes state: it needs --dry-run", path)
			}
			if slices.Contains(confirmedCommands, path) {
				assert.False(t, readOnly || local, "%s is classified twice", path)
			}
			if idWords.MatchString(c.Use) || c.Flags().Lookup("record") != nil {
				assert.NotEmpty(t, c.Annotations[annotationID], "%s takes an id (%q): mark it with takesID, resolving a unique prefix", path, c.Use)
			}
			if c.Flags().Lookup("output") != nil {
				kind := c.Annotations[annotationOutput]
				assert.Contains(t, []string{outputList, outputDocument}, kind, "%s has -o: mark it outputs(outputList or outputDocument)", path)
			}
		})
	}
	for _, p := range slices.Concat(readOnlyCommands, localCommands, confirmedCommands) {
		found := false
		for _, c := range leaves(root) {
			found = found || c.CommandPath() == p
		}
		assert.True(t, found, "%s is listed but is no command", p)
	}
	t.Logf("checked %d commands", checked)
}

// shapeEnv is a running serve behind a proxy that counts the requests
// that may write (every method but GET), a record, a rule, and an archive
// with one sweep of one record.
type shapeEnv struct {
	serve   *running
	proxy   string
	writes  atomic.Int64
	record  string
	rule    string
	archive string
}

func newShapeEnv(t *testing.T) *shapeEnv {
	t.Helper()
	e := &shapeEnv{}
	var s cli
	e.serve = s.startServe(t, "serve", "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--scheduler=false")
	target, err := url.Parse(e.serve.info.HTTPURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			e.writes.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	e.proxy = h.URL

	js := connectJS(t, e.serve.info.NATSURL)
	store, err := jsstore.New(js, jsstore.WithRemovable(aggregate.Context))
	require.NoError(t, err)
	svc := aggregate.NewService(store)
	var recs []archive.Record
	for i, evt := range []string{"evt-shape-1", "evt-shape-2"} {
		id := aggregate.RecordID(evt, mailer)
		_, err := svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:  aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID}, Version: 1},
			Function: mailer, Error: aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}, ExecuteAt: t0,
			RetrySpec: &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 10, ExecutionTimeout: 30},
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		if i == 0 {
			e.record = id
			continue
		}
		hist, err := store.Load(t.Context(), aggregate.RecordAggregate(id), 1)
		require.NoError(t, err)
		recs = append(recs, archive.Record{ID: id, Function: mailer, Streams: hist})
	}
	dir := t.TempDir()
	sink, err := archive.OpenDir(dir)
	require.NoError(t, err)
	_, err = archive.WriteSweep(t.Context(), sink, 1, time.UnixMilli(t0), recs)
	require.NoError(t, err)
	e.archive = "dir:" + dir

	op := e.cli()
	require.Equal(t, exitOK, op.run(t, "rules", "add", "--action", "WAIVE", "--fingerprint", "fp1-00000000000000aa", "--reason", "test", "-o", "json"), op.stderr.String())
	var r struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(op.stdout.String()), &r))
	e.rule = r.ID
	require.Eventually(t, func() bool { c := e.cli(); return c.run(t, "show", e.record) == exitOK }, waitLimit, 20*time.Millisecond, "the record is projected")
	return e
}

func (e *shapeEnv) cli() *cli { return &cli{env: map[string]string{"AMENDS_SERVER": e.proxy}} }

// requireListShape checks out is the one list shape (docs/cli-json.md).
func requireListShape(t *testing.T, what, out string) []any {
	t.Helper()
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &doc), "%s: -o json is one JSON object: %s", what, out)
	var items []any
	require.NoError(t, json.Unmarshal(doc["items"], &items), "%s: items is an array: %s", what, out)
	require.NotNil(t, items, "%s: items is [], never null or absent: %s", what, out)
	for k, v := range doc {
		switch k {
		case "items":
		case "next":
			var s string
			assert.NoError(t, json.Unmarshal(v, &s), "%s: next is a cursor string", what)
			assert.NotEmpty(t, s, "%s: next is absent on the last page, never empty", what)
		case "more":
			assert.Equal(t, "true", string(v), "%s: more is absent or true", what)
		case "skipped":
			var n int
			assert.NoError(t, json.Unmarshal(v, &n), "%s: skipped is a count", what)
			assert.Positive(t, n, "%s: skipped is absent when 0", what)
		case "invalid":
			var inv []struct{ Key, Reason string }
			assert.NoError(t, json.Unmarshal(v, &inv), "%s: invalid lists keys and reasons", what)
		default:
			t.Errorf("%s: the list has a field %q outside the one shape: %s", what, k, out)
		}
	}
	return items
}

// Every -o json list has the one shape, every read-only command sends no
// write, every confirmed command refuses to run without --dry-run or
// --yes and then writes nothing, and ids are taken by unique prefix.
func TestEveryJSONListHasTheOneShape(t *testing.T) {
	e := newShapeEnv(t)
	lists := map[string][]string{
		"amends list":                {"list"},
		"amends history":             {"history", e.record},
		"amends quarantine list":     {"quarantine", "list"},
		"amends holds list":          {"holds", "list"},
		"amends rules list":          {"rules", "list"},
		"amends audit":               {"audit"},
		"amends circuits list":       {"circuits", "list"},
		"amends drains list":         {"drains", "list"},
		"amends archive list":        {"archive", "list", "--archive", e.archive},
		"amends archive show":        {"archive", "show", "--archive", e.archive, "--sweep", "1"},
		"amends archive restore":     {"archive", "restore", "--archive", e.archive, "--sweep", "1", "--nats-url", e.serve.info.NATSURL, "--dry-run"},
		"amends show":                nil, // a document
		"amends summary":             nil,
		"amends circuits show":       nil,
		"amends bench":               nil,
		"amends bench footprint":     nil,
		"amends bench storm":         nil,
		"amends bench partitions":    nil,
		"amends replay":              nil,
		"amends holds release":       nil,
		"amends holds skip":          nil,
		"amends prepare":             nil,
		"amends force-prepare":       nil,
		"amends retry-spec":          nil,
		"amends mark-recoverable":    nil,
		"amends change-function":     nil,
		"amends rules add":           nil,
		"amends rules apply":         nil,
		"amends rules remove":        nil,
		"amends circuits open":       nil,
		"amends circuits close":      nil,
		"amends repair purge-entry":  nil,
		"amends repair skip-message": nil,
	}
	root := newRootCmd(&app{})
	var paths []string
	for _, c := range leaves(root) {
		kind := c.Annotations[annotationOutput]
		if kind == "" {
			continue
		}
		p := c.CommandPath()
		paths = append(paths, p)
		args, known := lists[p]
		require.True(t, known, "%s has -o json and no case here: add how to run it", p)
		if kind == outputDocument {
			assert.Nil(t, args, "%s prints a document, yet is run here as a list", p)
			continue
		}
		require.NotNil(t, args, "%s prints a list: give the arguments to run it", p)
		before := e.writes.Load()
		c := e.cli()
		require.Equal(t, exitOK, c.run(t, append(args, "-o", "json")...), "%s: %s", p, c.stderr.String())
		items := requireListShape(t, p, c.stdout.String())
		switch p {
		case "amends list", "amends history", "amends rules list", "amends archive list", "amends archive show", "amends archive restore":
			assert.NotEmpty(t, items, "%s lists what the env holds", p)
		}
		if slices.Contains(readOnlyCommands, p) {
			assert.Equal(t, before, e.writes.Load(), "%s is read-only, yet sent a write", p)
		}
	}
	sort.Strings(paths)
	t.Logf("checked the output of %d commands", len(paths))

	// The read-only commands that print documents send no write either.
	for _, args := range [][]string{{"show", e.record}, {"summary"}, {"circuits", "show", "order.Mailer.onOrderPlaced"}} {
		before := e.writes.Load()
		c := e.cli()
		code := c.run(t, args...)
		assert.Contains(t, []int{exitOK, exitNotFound}, code, "%v: %s", args, c.stderr.String())
		assert.Equal(t, before, e.writes.Load(), "%v is read-only, yet sent a write", args)
	}

	// Every confirmed command refuses to run with neither flag, before it
	// writes anything.
	confirm := map[string][]string{
		"amends holds release":       {"holds", "release", "order.Mailer.onOrderPlaced.order.o-1"},
		"amends holds skip":          {"holds", "skip", "order.Mailer.onOrderPlaced.order.o-1", "evt-1", "--reason", "x"},
		"amends replay":              {"replay", "--context", "order", "--aggregate", "order/o-1", "--from", "1", "--to", "1", "--function", "Mailer.onOrderPlaced", "--reason", "x"},
		"amends rules apply":         {"rules", "apply", e.rule},
		"amends rules remove":        {"rules", "remove", e.rule, "--reason", "x"},
		"amends circuits open":       {"circuits", "open", "order.Mailer.onOrderPlaced", "--reason", "x"},
		"amends circuits close":      {"circuits", "close", "order.Mailer.onOrderPlaced", "--reason", "x"},
		"amends repair purge-entry":  {"repair", "purge-entry", "--bucket", "amends-views", "--key", "k", "--revision", "1", "--reason", "x"},
		"amends repair skip-message": {"repair", "skip-message", "--stream", "AMENDS_compensation", "--seq", "1", "--reason", "x"},
		"amends archive restore":     {"archive", "restore", "--archive", e.archive, "--sweep", "1", "--nats-url", e.serve.info.NATSURL},
		// A batch of prepares or force-prepares by filter.
		"amends prepare --filter":       {"prepare", "--processor", "Mailer"},
		"amends force-prepare --filter": {"force-prepare", "--processor", "Mailer", "--reason", "x"},
	}
	for _, p := range confirmedCommands {
		_, ok := confirm[p]
		require.True(t, ok, "%s: give the arguments to run it without confirmation", p)
	}
	for p, args := range confirm {
		before := e.writes.Load()
		c := e.cli()
		assert.Equal(t, exitUsage, c.run(t, args...), "%s without --dry-run or --yes: %s", p, c.stderr.String())
		assert.Contains(t, c.stderr.String(), "--dry-run", "%s: the error says what to give", p)
		assert.Equal(t, before, e.writes.Load(), "%s wrote before its confirmation", p)
	}

	// Ids by unique prefix: a record, a rule, an archived record.
	c := e.cli()
	require.Equal(t, exitOK, c.run(t, "show", e.record[:6]), c.stderr.String())
	assert.Contains(t, c.stdout.String(), e.record)
	c = e.cli()
	require.Equal(t, exitOK, c.run(t, "rules", "remove", e.rule[:5], "--reason", "x", "--dry-run"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), e.rule)
	var sweep listJSON[api.ArchivedRecord]
	c = e.cli()
	require.Equal(t, exitOK, c.run(t, "archive", "show", "--archive", e.archive, "--sweep", "1", "-o", "json"), c.stderr.String())
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &sweep))
	require.Len(t, sweep.Items, 1)
	archived := sweep.Items[0].ID
	c = e.cli()
	require.Equal(t, exitOK, c.run(t, "archive", "show", "--archive", e.archive, "--sweep", "1", "--record", archived[:5], "-o", "json"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), archived)
}

// A prefix of several ids is refused, naming some of them; an exact id
// wins over the ids it begins; a prefix of none is left to the lookup.
func TestUniquePrefix(t *testing.T) {
	ids := []string{"r-aa01", "r-aa02", "r-ab", "r-ab7", "r-b"}
	for _, c := range []struct{ arg, want, err string }{
		{"r-b", "r-b", ""},
		{"r-ab", "r-ab", ""}, // exact, though r-ab7 begins with it
		{"r-aa0", "", `the rule id prefix "r-aa0" is ambiguous: it begins r-aa01, r-aa02; give more of the id`},
		{"r-a", "", "it begins r-aa01, r-aa02, r-ab, ..."},
		{"r-c", "r-c", ""},
	} {
		got, err := uniquePrefix("rule", c.arg, ids)
		if c.err != "" {
			require.Error(t, err, c.arg)
			assert.Contains(t, err.Error(), c.err)
			var u usageError
			assert.ErrorAs(t, err, &u, "an ambiguous prefix is a usage error")
			continue
		}
		require.NoError(t, err, c.arg)
		assert.Equal(t, c.want, got, fmt.Sprintf("prefix %s", c.arg))
	}
}
