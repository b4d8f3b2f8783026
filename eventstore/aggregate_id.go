package eventstore

import (
	"fmt"
	"unicode/utf8"

	"github.com/amends-dev/amends/internal/text"
)

// Limits on names and ids. They keep subjects, headers and logs readable and
// bound the work a malformed request can cause.
const (
	// MaxNameLength is the longest context, aggregate type or event name.
	MaxNameLength = 64
	// MaxIDLength is the longest aggregate id, stream id or event id, in bytes.
	MaxIDLength = 256
)

// AggregateID identifies one aggregate: the bounded context (service) that
// owns it, its type and its id within that type. It is the aggregate id of
// every Go API of amends.
//
// ExecutionFailed records and the projection's items carry the same id in
// Wow's JSON shape, as aggregate.WireAggregateID (ContextName,
// AggregateName, AggregateID, TenantID); aggregate.WireAggregateIDOf and
// WireAggregateID.StoreID convert between the two.
type AggregateID struct {
	// Context is the bounded context, a name (see ValidateName).
	Context string `json:"context"`
	// Type is the aggregate type, a name (see ValidateName).
	Type string `json:"type"`
	// ID is the aggregate's id: any UTF-8 text without control characters,
	// 1 to MaxIDLength bytes.
	ID string `json:"id"`
}

// String returns "context.type/id", for messages and logs.
func (a AggregateID) String() string { return a.Context + "." + a.Type + "/" + a.ID }

// Validate reports whether a can be stored. The error matches ErrInvalid and
// names the field.
func (a AggregateID) Validate() error {
	if err := ValidateName("aggregate context", a.Context); err != nil {
		return err
	}
	if err := ValidateName("aggregate type", a.Type); err != nil {
		return err
	}
	return ValidateID("aggregate id", a.ID)
}

// ValidateName checks a context, aggregate type or event name: 1 to
// MaxNameLength characters from [A-Za-z0-9_-]. field names the value in the
// error, which matches ErrInvalid.
func ValidateName(field, name string) error {
	if name == "" {
		return invalid("%s is empty; it must be 1 to %d characters from [A-Za-z0-9_-]", field, MaxNameLength)
	}
	if len(name) > MaxNameLength {
		return invalid("%s %.20q... is %d characters, over the limit of %d", field, name, len(name), MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return invalid("%s %q has %s at byte %d; only [A-Za-z0-9_-] are allowed", field, name, text.At(name, i), i)
		}
	}
	return nil
}

// ValidateID checks an aggregate, stream or event id: 1 to MaxIDLength bytes
// of valid UTF-8 without control characters. field names the value in the
// error, which matches ErrInvalid.
func ValidateID(field, id string) error {
	if id == "" {
		return invalid("%s is empty; it must be 1 to %d bytes of UTF-8 text", field, MaxIDLength)
	}
	if len(id) > MaxIDLength {
		return invalid("%s is %d bytes, over the limit of %d", field, len(id), MaxIDLength)
	}
	if !utf8.ValidString(id) {
		return invalid("%s %q is not valid UTF-8", field, id)
	}
	for i, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return invalid("%s %q has the control character %U at byte %d", field, id, r, i)
		}
	}
	return nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// describe is used by messages that quote a value of unknown length.
func describe(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...", s[:40])
	}
	return fmt.Sprintf("%q", s)
}
