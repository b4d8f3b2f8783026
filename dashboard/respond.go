package dashboard

import (
	"encoding/json"
	"net/http"
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
