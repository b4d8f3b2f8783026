package projection

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/kvstore"
)

// encodeView returns the stored JSON of v, after checking that every
// reader (the index, Get, the API) accepts it, whatever state Evolve made
// of the events: decodeView reads it back (readsBack) and it passes the
// readers' checkView, one rule for writer and readers. A view a reader
// would refuse is never written, so no reader asks for it again and
// again. The error matches ErrCorruptView and names what the reader
// refuses.
//
// The bytes are those of json.Marshal(v), written by the view's codec
// (viewcodec.go).
func encodeView(v *api.View) ([]byte, error) {
	if err := readsBack(v); err != nil {
		return nil, fmt.Errorf("record %s version %d would not read back: %w", v.State.ID, v.Version, err)
	}
	// Under its own key, which the writer makes from its processor and
	// id (none for an id or processor that cannot make one: checkView
	// names which).
	key, _ := ViewKey(v.State.Function.ProcessorName, v.State.ID)
	if err := checkView(key, v); err != nil {
		return nil, fmt.Errorf("record %s version %d would not validate: %w", v.State.ID, v.Version, errInvalidView(err))
	}
	return appendView(v)
}

// readsBack reports whether decodeView accepts what appendView writes
// for v, without decoding it. What encoding/json writes is valid UTF-8
// JSON with unique names and numbers of the fields' own types, so the
// reader can only refuse the checks below: an empty record id, version
// 0, and an enum (status, function kind, a non-empty recoverable) that
// its parser rejects. TestReadsBackIsWhatDecodeViewAccepts and
// FuzzReadsBack hold this against decodeView. The error matches
// ErrCorruptView and names the field, as the reader's would.
func readsBack(v *api.View) error {
	if v.State.ID == "" || v.Version == 0 {
		return fmt.Errorf("decode view: no record id or version 0: %w", ErrCorruptView)
	}
	if _, err := aggregate.ParseStatus(string(v.State.Status)); err != nil {
		return fmt.Errorf("decode view: %v: %w", err, ErrCorruptView)
	}
	if _, err := aggregate.ParseFunctionKind(string(v.State.Function.FunctionKind)); err != nil {
		return fmt.Errorf("decode view: function: %v: %w", err, ErrCorruptView)
	}
	if v.State.Recoverable != "" {
		if _, err := aggregate.ParseRecoverability(string(v.State.Recoverable)); err != nil {
			return fmt.Errorf("decode view: %v: %w", err, ErrCorruptView)
		}
	}
	return nil
}

// readView parses a stored view: by the view's codec if it is in the
// codec's layout (decodeViewFields), else with decodeView. An error
// matches ErrCorruptView.
func readView(data []byte) (api.View, error) {
	var f viewFields
	if decodeViewFields(data, &f) {
		return f.view(), nil
	}
	return decodeView(data)
}

// storedView reads the view stored under key as every reader does:
// readView, then checkView. An error matches ErrCorruptView or is a
// *kvstore.FieldError naming the field.
func storedView(key string, data []byte) (api.View, error) {
	v, err := readView(data)
	if err == nil {
		err = checkView(key, &v)
	}
	return v, err
}

// decodeView parses a stored view in any shape with the json/v2
// prototype, as the event store does for documents out of its layout. An
// error matches ErrCorruptView.
func decodeView(data []byte) (api.View, error) {
	var v api.View
	if err := jsonv2.Unmarshal(data, &v); err != nil {
		return api.View{}, fmt.Errorf("decode view: %v: %w", err, ErrCorruptView)
	}
	if v.State.ID == "" || v.Version == 0 {
		return api.View{}, fmt.Errorf("decode view: no record id or version 0: %w", ErrCorruptView)
	}
	return v, nil
}

// carriedView returns the view a stream carries: the record's state after
// the stream. ok is false if the stream carries no state for its record.
func carriedView(st *eventstore.Stream) (api.View, bool) {
	state, ok := aggregate.CarriedState(*st)
	if !ok {
		return api.View{}, false
	}
	return api.View{State: state, Version: st.Version, UpdatedAt: st.CreateTime, Seq: st.Seq}, true
}

// What a view must hold beyond what decodeView reads, so that no reader
// acts on a view written by something else (a hand edit, a bad
// migration): checkView and checkFields, one rule for both decoders.
//
//   - it is stored under its record's key (ViewKey of its processor and
//     state.id);
//   - its function names a context, a processor and a name;
//   - retries and maxRetries are not negative, the times not negative;
//   - its version is not above its sequence (version v of a record is at a
//     stream sequence of at least v), when the sequence is known.
//
// An error is a *kvstore.FieldError naming the field.

// checkView checks v, stored under key.
func checkView(key string, v *api.View) error {
	s := &v.State
	return checkRule(key, s.ID, s.Function.ProcessorName, s.Function.ContextName != "", s.Function.Name != "",
		s.RetryState.Retries, s.RetrySpec.MaxRetries, s.ExecuteAt, s.RetryState.TimeoutAt, s.RetryState.NextRetryAt, v.Version, v.Seq)
}

// checkFields checks what decodeViewFields read of a view stored under
// key; it allocates nothing for a record id that is its own key.
func checkFields(key string, f *viewFields) error {
	return checkRule(key, string(f.id), string(f.fnProcessor), len(f.fnContext) > 0, len(f.fnName) > 0,
		f.retries, f.maxRetries, f.executeAt, f.timeoutAt, f.nextRetryAt, f.version, f.seq)
}

func checkRule(key, id, processor string, hasContext, hasName bool, retries, maxRetries int32, executeAt, timeoutAt, nextRetryAt int64, version, seq uint64) error {
	switch {
	case !hasContext:
		return kvstore.Invalid("state.function.contextName", "must not be empty")
	case processor == "":
		return kvstore.Invalid("state.function.processorName", "must not be empty")
	case !keyOf(key, processor, id):
		return kvstore.Invalid("state.id", "%s of processor %s is not the record of key %s", kvstore.Quote(id), kvstore.Quote(processor), kvstore.QuoteKey(key))
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
