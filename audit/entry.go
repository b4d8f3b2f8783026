package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/text"
)

// checkCredential refuses a credential kind that is not one of
// api.AuditCredentials ("" is an entry recorded before they were kept).
func checkCredential(c api.AuditCredential) error {
	if c != "" && !slices.Contains(api.AuditCredentials, c) {
		return fmt.Errorf("credential %q is not one of the kinds", text.Cut(string(c), 40))
	}
	return nil
}

// Kinds lists every kind.
var Kinds = api.AuditKinds

// ParseKind reads a kind's name; the error lists the kinds.
func ParseKind(s string) (api.AuditKind, error) {
	if slices.Contains(Kinds, api.AuditKind(s)) {
		return api.AuditKind(s), nil
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("kind %q is not one of %s", text.Cut(s, 40), strings.Join(names, ", "))
}

// Limits of an entry's fields; Record cuts longer values (an audit entry
// is not refused for a long reason), reading refuses them.
const (
	MaxActorBytes  = 256
	MaxClientBytes = 64
	MaxRouteBytes  = 256
	MaxIDBytes     = 256
	MaxReasonBytes = 512
	// maxEntryBytes bounds one stored entry.
	maxEntryBytes = 4 << 10
)

// clean cuts e's fields to their limits, as valid UTF-8 without control
// characters, so that Record stores what reading accepts.
func clean(e *api.AuditEntry) {
	for _, f := range []struct {
		s     *string
		limit int
	}{{&e.Actor, MaxActorBytes}, {&e.Role, 16}, {&e.Client, MaxClientBytes}, {&e.Method, 16}, {&e.Route, MaxRouteBytes},
		{&e.Record, MaxIDBytes}, {&e.Event, MaxIDBytes}, {&e.Reason, MaxReasonBytes}} {
		*f.s = printable(*f.s, f.limit)
	}
}

// printable replaces invalid UTF-8, control and format characters with
// U+FFFD and cuts s to limit bytes at a character boundary.
func printable(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return text.Cut(s, limit)
}

// decodeEntry reads a stored entry and checks every field: its kind is
// one of Kinds, its time positive, and each text within its limit, valid
// UTF-8, without control or format characters.
func decodeEntry(data []byte) (api.AuditEntry, error) {
	var e api.AuditEntry
	if len(data) > maxEntryBytes {
		return e, fmt.Errorf("entry of %d bytes, over %d", len(data), maxEntryBytes)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("entry does not decode: %v", err)
	}
	if _, err := ParseKind(string(e.Kind)); err != nil {
		return e, err
	}
	if e.Time <= 0 {
		return e, fmt.Errorf("entry has time %d", e.Time)
	}
	if err := checkCredential(e.Credential); err != nil {
		return e, fmt.Errorf("entry %w", err)
	}
	for _, f := range []struct {
		name, s string
		limit   int
	}{{"actor", e.Actor, MaxActorBytes}, {"role", e.Role, 16}, {"client", e.Client, MaxClientBytes}, {"method", e.Method, 16},
		{"route", e.Route, MaxRouteBytes}, {"record", e.Record, MaxIDBytes}, {"event", e.Event, MaxIDBytes}, {"reason", e.Reason, MaxReasonBytes}} {
		if len(f.s) > f.limit || printable(f.s, f.limit) != f.s {
			return e, fmt.Errorf("entry field %s is not up to %d bytes of printable text", f.name, f.limit)
		}
	}
	return e, nil
}
