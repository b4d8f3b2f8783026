package projection

import (
	"fmt"

	"github.com/amends-dev/amends/internal/kvstore"
)

// What a view must hold beyond what decodeView reads, so that no reader
// acts on a view written by something else (a hand edit, a bad
// migration): checkView and checkFields, one rule for both decoders.
//
//   - it is stored under its record's key (EncodeKey of state.id);
//   - its function names a context, a processor and a name;
//   - retries and maxRetries are not negative, the times not negative;
//   - its version is not above its sequence (version v of a record is at a
//     stream sequence of at least v), when the sequence is known.
//
// An error is a *kvstore.FieldError naming the field.

// checkView checks v, stored under key.
func checkView(key string, v *View) error {
	s := &v.State
	return checkRule(key, s.ID, s.Function.ContextName != "", s.Function.ProcessorName != "", s.Function.Name != "",
		s.RetryState.Retries, s.RetrySpec.MaxRetries, s.ExecuteAt, s.RetryState.TimeoutAt, s.RetryState.NextRetryAt, v.Version, v.Seq)
}

// checkFields checks what decodeViewFields read of a view stored under
// key; it allocates nothing for a record id that is its own key.
func checkFields(key string, f *viewFields) error {
	return checkRule(key, string(f.id), len(f.fnContext) > 0, len(f.fnProcessor) > 0, len(f.fnName) > 0,
		f.retries, f.maxRetries, f.executeAt, f.timeoutAt, f.nextRetryAt, f.version, f.seq)
}

func checkRule(key, id string, hasContext, hasProcessor, hasName bool, retries, maxRetries int32, executeAt, timeoutAt, nextRetryAt int64, version, seq uint64) error {
	if key != id {
		if k, err := EncodeKey(id); err != nil || k != key {
			return kvstore.Invalid("state.id", "%s is not the record of key %s", kvstore.Quote(id), kvstore.QuoteKey(key))
		}
	}
	switch {
	case !hasContext:
		return kvstore.Invalid("state.function.contextName", "must not be empty")
	case !hasProcessor:
		return kvstore.Invalid("state.function.processorName", "must not be empty")
	case !hasName:
		return kvstore.Invalid("state.function.name", "must not be empty")
	case retries < 0:
		return kvstore.Invalid("state.retryState.retries", "must not be negative, got %d", retries)
	case maxRetries < 0:
		return kvstore.Invalid("state.retrySpec.maxRetries", "must not be negative, got %d", maxRetries)
	case executeAt < 0 || timeoutAt < 0 || nextRetryAt < 0:
		return kvstore.Invalid("state", "times must not be negative, got executeAt %d, timeoutAt %d, nextRetryAt %d", executeAt, timeoutAt, nextRetryAt)
	case seq != 0 && version > seq:
		return kvstore.Invalid("version", "%d is above the view's sequence %d: version v of a record is at a sequence of at least v", version, seq)
	}
	return nil
}

// errInvalidView wraps a check's refusal as ErrCorruptView.
func errInvalidView(err error) error { return fmt.Errorf("decode view: %v: %w", err, ErrCorruptView) }
