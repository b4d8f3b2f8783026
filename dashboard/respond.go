package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// apiError is the API's error body: {code, message, details}.
type apiError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string, details map[string]any) {
	writeJSON(w, status, apiError{Code: code, Message: message, Details: details})
}

// clip shortens client input quoted in a message to 64 bytes of valid
// UTF-8.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	s = s[:64]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// checkQuery answers 400 and returns false if r's query is malformed, has
// a parameter outside allowed or gives one twice: a typo is not silently
// ignored.
func checkQuery(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	if r.URL.RawQuery == "" {
		return true
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", "the query is not valid URL encoding; escape % as %25", map[string]any{"field": "query"})
		return false
	}
	for k, vs := range q {
		switch {
		case !slices.Contains(allowed, k):
			takes := "none"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, ", ")
			}
			field := k
			if field == "" || !utf8.ValidString(field) {
				field = "query"
			}
			writeError(w, http.StatusBadRequest, "BadRequest", "unknown query parameter "+strconv.Quote(clip(k))+"; "+r.URL.Path+" takes "+takes, map[string]any{"field": clip(field)})
			return false
		case len(vs) > 1:
			writeError(w, http.StatusBadRequest, "BadRequest", "query parameter "+k+" is given "+strconv.Itoa(len(vs))+" times; give it once", map[string]any{"field": k})
			return false
		}
	}
	return true
}
