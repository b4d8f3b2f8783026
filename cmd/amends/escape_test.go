package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSafeWriterEscapesWhatATerminalWouldNotShow(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tabs\tand\nnewlines": "plain text, tabs\tand\nnewlines",
		"approved \u202egnp.exe":          `approved \u202egnp.exe`,
		"zero\u200bwidth \ufeffbom":       `zero\u200bwidth \ufeffbom`,
		"a \x1b[2Jclear and \rreturn":     `a \u001b[2Jclear and \u000dreturn`,
		"line\u2028sep":                   `line\u2028sep`,
		"bad \xff byte":                   `bad \xff byte`,
		"Greylisting — 灰名单 ü":             "Greylisting — 灰名单 ü",
		"\u0085next line (C1)":            `\u0085next line (C1)`,
	} {
		var b bytes.Buffer
		w := &safeWriter{w: &b}
		// Byte by byte: characters split across writes are kept whole.
		for i := 0; i < len(in); i++ {
			_, err := w.Write([]byte{in[i]})
			require.NoError(t, err)
		}
		assert.Equal(t, want, b.String(), "%q", in)
	}
	// JSON stays JSON, with the same strings.
	var b bytes.Buffer
	require.NoError(t, printJSON(&safeWriter{w: &b}, map[string]string{"reason": "ok \u202eevil"}))
	var back map[string]string
	require.NoError(t, json.Unmarshal(b.Bytes(), &back), b.String())
	assert.Equal(t, "ok \u202eevil", back["reason"])
	assert.NotContains(t, b.String(), "\u202e")
}

// amends history printed a reason's bidi override raw; a reason from an
// older server (or written past the API) now prints escaped.
func TestHistoryEscapesInvisibleCharacters(t *testing.T) {
	srv := fakeAPI(t, map[string]string{
		"/api/v1/records/r1/attempts": `{"id":"r1","timeline":[]}`,
		"/api/v1/records/r1/history":  `[{"version":1,"seq":1,"createTime":1735000000000,"command":"force_prepare_compensation","actor":"mallory\u001b[2J","reason":"approved \u202eexe.fdp","events":[]}]`,
	})
	var c cli
	require.Equal(t, exitOK, c.run(t, "history", "r1", "--server", srv), c.stderr.String())
	out := c.stdout.String()
	assert.Contains(t, out, `approved \u202eexe.fdp`)
	assert.Contains(t, out, `mallory\u001b[2J`)
	assert.NotContains(t, out, "\u202e")
	assert.NotContains(t, out, "\x1b")
}

// fakeAPI serves fixed JSON bodies by path.
func fakeAPI(t *testing.T, bodies map[string]string) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
	return startHTTP(t, h, 8, waitLimit).url
}
