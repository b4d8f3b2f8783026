package kvstore

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/internal/text"
)

// InvalidError is a stored entry its bucket's decoder refused. It matches
// ErrInvalid.
type InvalidError struct {
	Bucket string
	Key    string
	// Revision is the entry's revision: its sequence in the bucket's
	// stream KV_<bucket>.
	Revision uint64
	// Field names what is wrong: a JSON path such as "retrySpec" or
	// "batch[3].id", "key" for the key, "" for the whole value.
	Field string
	// Reason says what is wrong and what the rule is.
	Reason string
	// unaudited: the value would change behaviour without amends' actor
	// (Unaudited).
	unaudited bool
}

// Unaudited reports whether the entry was refused because it would change
// behaviour (force a circuit, apply a rule) without the actor or audit
// entry amends writes with every such change: a value written past
// amends, whose first sighting goes to the audit log.
func (e *InvalidError) Unaudited() bool { return e.unaudited }

// ErrUnaudited marks a decoder's error as Unaudited (wrap it with
// ErrInvalid's own sentinel, or use Unaudited).
var ErrUnaudited = errors.New("the value changes behaviour without amends' actor")

func (e *InvalidError) Error() string {
	where := fmt.Sprintf("bucket %s key %s revision %d", e.Bucket, QuoteKey(e.Key), e.Revision)
	if e.Field != "" {
		return where + ": " + e.Field + ": " + e.Reason
	}
	return where + ": " + e.Reason
}

// Is matches ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// FieldError is what a decoder returns: the field and the rule it breaks.
// The Store turns it into an *InvalidError with the bucket, key and
// revision.
type FieldError struct {
	Field  string
	Reason string
	// ignored: the decoder dropped the field and returned a value all the
	// same (Ignore).
	ignored bool
	// unaudited: see InvalidError.Unaudited.
	unaudited bool
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Invalid returns a *FieldError for field, its reason formatted.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Unaudited is Invalid for a value refused because it would change
// behaviour without the actor or audit entry amends writes with it (see
// InvalidError.Unaudited).
func Unaudited(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), unaudited: true}
}

// Ignore is what a decoder returns with a value it kept after dropping a
// field that does not validate, treated as absent (a claim or a time far
// in the future): the Store returns the value, and reports the entry as
// invalid all the same, with reason naming what was ignored.
func Ignore(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...) + "; treated as absent", ignored: true}
}

// In prefixes the field of err (a *FieldError) with parent, so that a
// decoder of a part reports "parent.field"; other errors become a
// *FieldError of parent.
func In(parent string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		f := parent
		if fe.Field != "" {
			if strings.HasPrefix(fe.Field, "[") {
				f += fe.Field
			} else {
				f += "." + fe.Field
			}
		}
		return &FieldError{Field: f, Reason: fe.Reason, ignored: fe.ignored, unaudited: fe.unaudited}
	}
	return &FieldError{Field: parent, Reason: err.Error()}
}

// invalidAt turns a decoder's error into the *InvalidError of an entry.
func invalidAt(bucket, key string, rev uint64, err error) *InvalidError {
	var ie *InvalidError
	if errors.As(err, &ie) {
		c := *ie
		c.Bucket, c.Key, c.Revision = bucket, key, rev
		return &c
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return &InvalidError{Bucket: bucket, Key: key, Revision: rev, Field: fe.Field, Reason: clip(fe.Reason, maxReason),
			unaudited: fe.unaudited || errors.Is(err, ErrUnaudited)}
	}
	return &InvalidError{Bucket: bucket, Key: key, Revision: rev, Reason: clip(err.Error(), maxReason), unaudited: errors.Is(err, ErrUnaudited)}
}

// maxReason bounds the reason an InvalidError carries: a decoder's message
// may quote what it read.
const maxReason = 512

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Cut(s, n) + "…"
}

// Quote renders a value read from a bucket for a message: quoted, control
// characters escaped, at most 64 bytes of it.
func Quote(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", clip(s, 64), len(s))
	}
	return fmt.Sprintf("%q", s)
}

// QuoteKey renders a key for a message: as it is when it is a valid key
// (the common case), else quoted and clipped.
func QuoteKey(key string) string {
	if ValidKey(key) == nil && len(key) <= 128 {
		return key
	}
	return Quote(key)
}

// Text checks a text field: at most max bytes of UTF-8 without control
// characters (a tab is allowed), and not blank if required.
func Text(field, v string, max int, required bool) error {
	switch {
	case required && strings.TrimSpace(v) == "":
		return Invalid(field, "must not be blank")
	case len(v) > max:
		return Invalid(field, "is %d bytes, over the limit of %d", len(v), max)
	case !utf8.ValidString(v):
		return Invalid(field, "is not valid UTF-8")
	}
	for _, r := range v {
		if (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return Invalid(field, "has the control character %U", r)
		}
	}
	return nil
}

// Line checks a field of operator text read back (a reason, an actor):
// text.Line's rule, the one it was taken by, and not blank if required.
func Line(field, v string, max int, required bool) error {
	if required && strings.TrimSpace(v) == "" {
		return Invalid(field, "must not be blank")
	}
	if err := text.Line(v, max); err != nil {
		return Invalid(field, "%s", err)
	}
	return nil
}

// Name checks a name field (a context, processor, function, aggregate
// type, instance): 1 to max bytes, text without spaces or control
// characters.
func Name(field, v string, max int) error {
	if v == "" {
		return Invalid(field, "must not be empty")
	}
	if err := Text(field, v, max, true); err != nil {
		return err
	}
	if strings.ContainsAny(v, " \t") {
		return Invalid(field, "%s must not contain spaces", Quote(v))
	}
	return nil
}

// MaxAhead is how far after now a time that says when something happened
// may be: clocks of different machines differ by a little, never by a day.
const MaxAhead = 24 * time.Hour

// Past checks a time (epoch ms) that says when something happened: not
// negative (0 if optional), and not more than MaxAhead after now.
func Past(field string, ms int64, now time.Time, optional bool) error {
	switch {
	case ms == 0 && optional:
		return nil
	case ms <= 0:
		return Invalid(field, "must be a time in epoch milliseconds, got %d", ms)
	case ms > now.Add(MaxAhead).UnixMilli():
		return Invalid(field, "is %s, more than %s after now (%s)", fmtMs(ms), MaxAhead, now.UTC().Format(time.RFC3339))
	}
	return nil
}

// Within checks a time (epoch ms) that must lie from 0 to at most ahead
// after now (a deadline, a claim's end, a lease).
func Within(field string, ms int64, now time.Time, ahead time.Duration) error {
	if !bounds.Within(ms, 0, now.Add(ahead).UnixMilli()) {
		return Invalid(field, "is %s; it must be a time from 1970 to %s after now (%s)", fmtMs(ms), ahead, now.UTC().Format(time.RFC3339))
	}
	return nil
}

// fmtMs renders an epoch-ms time for a message, also when it is beyond
// what time.Time formats.
func fmtMs(ms int64) string {
	const maxYear9999 = 253402300799999
	if !bounds.Within(ms, 0, maxYear9999) {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%d (%s)", ms, time.UnixMilli(ms).UTC().Format(time.RFC3339))
}

// Range checks an integer field against [lo, hi].
func Range[N ~int | ~int32 | ~int64 | ~uint64 | ~uint32](field string, v, lo, hi N) error {
	if !bounds.Within(v, lo, hi) {
		return Invalid(field, "must be from %d to %d, got %d", lo, hi, v)
	}
	return nil
}

// OneOf checks that v is one of the allowed values.
func OneOf[S ~string](field string, v S, allowed ...S) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return Invalid(field, "must be one of %s, got %s", strings.Join(names, ", "), Quote(string(v)))
}
