package api

// Error is the body of every error response.
type Error struct {
	// Code is a stable machine-readable code, e.g. "IllegalState".
	Code string `json:"code"`
	// Message says what was wrong and what to do.
	Message string `json:"message"`
	// Details carries structured facts, e.g. the offending field.
	Details map[string]any `json:"details,omitempty"`
}
