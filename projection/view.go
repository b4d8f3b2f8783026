package projection

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
)

// View is the persisted read model of one record: its state after the
// stream of version Version, which the store holds at sequence Seq. It is
// the API's type, the body of GET /api/v1/records/{id}.
type View = api.View

// encodeView returns the stored JSON of v, after checking that
// decodeView reads it back: a view is only written if every reader (the
// index, Get, the API) accepts it, whatever state Evolve made of the
// events. The error matches ErrCorruptView and names what the reader
// refuses.
//
// The bytes are those of json.Marshal(v), written by the view's codec
// (viewcodec.go).
func encodeView(v *View) ([]byte, error) {
	if err := readsBack(v); err != nil {
		return nil, fmt.Errorf("record %s version %d would not read back: %w", v.State.ID, v.Version, err)
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
func readsBack(v *View) error {
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
func readView(data []byte) (View, error) {
	var f viewFields
	if decodeViewFields(data, &f) {
		return f.view(), nil
	}
	return decodeView(data)
}

// decodeView parses a stored view in any shape with the json/v2
// prototype, as the event store does for documents out of its layout. An
// error matches ErrCorruptView.
func decodeView(data []byte) (View, error) {
	var v View
	if err := jsonv2.Unmarshal(data, &v); err != nil {
		return View{}, fmt.Errorf("decode view: %v: %w", err, ErrCorruptView)
	}
	if v.State.ID == "" || v.Version == 0 {
		return View{}, fmt.Errorf("decode view: no record id or version 0: %w", ErrCorruptView)
	}
	return v, nil
}

// carriedView returns the view a stream carries: the record's state after
// the stream. ok is false if the stream carries no state for its record.
func carriedView(st *eventstore.Stream) (View, bool) {
	state, ok := aggregate.CarriedState(*st)
	if !ok {
		return View{}, false
	}
	return View{State: state, Version: st.Version, UpdatedAt: st.CreateTime, Seq: st.Seq}, true
}
