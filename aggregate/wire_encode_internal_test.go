package aggregate

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"pgregory.net/rapid"
)

// encodeWire writes the JSON encoding/json's Marshal writes for every
// event and for a record's snapshot, whatever their strings hold (HTML
// characters, line separators, control characters, invalid UTF-8) and
// whatever their numbers are, and it fails where Marshal fails. The store
// writes both in their canonical form (eventstore.Encode), and there they
// are the same bytes; before it, a string's invalid UTF-8 is the
// replacement character, which Marshal escapes and encodeWire does not.
func TestEncodeWireWritesWhatMarshalWrites(t *testing.T) {
	str := rapid.OneOf(
		rapid.String(),
		rapid.StringOf(rapid.SampledFrom([]rune{'<', '>', '&', '\u2028', '\u2029', '"', '\\', '\n', '\t', 0, 0x7f, 'é', '😀', '\ufffd', 'a'})),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	)
	rapid.Check(t, func(t *rapid.T) {
		e := ErrorDetails{ErrorCode: str.Draw(t, "code"), ErrorMsg: str.Draw(t, "msg"), StackTrace: str.Draw(t, "stack"), Fingerprint: str.Draw(t, "fingerprint")}
		if rapid.Bool().Draw(t, "bindings") {
			e.BindingErrors = []BindingError{{Name: str.Draw(t, "bindingName"), Msg: str.Draw(t, "bindingMsg")}, {}}
		}
		fn := FunctionInfo{FunctionKind: KindEvent, ContextName: str.Draw(t, "context"), ProcessorName: str.Draw(t, "processor"), Name: str.Draw(t, "function")}
		id := EventID{ID: str.Draw(t, "eventID"), AggregateID: WireAggregateID{ContextName: "c", AggregateName: str.Draw(t, "type"), AggregateID: str.Draw(t, "aggregate")},
			Version: rapid.Uint64().Draw(t, "version")}
		at := rapid.Int64().Draw(t, "at")
		state := RetryState{Retries: rapid.Int32().Draw(t, "retries"), RetryAt: at, TimeoutAt: rapid.Int64().Draw(t, "timeoutAt"), NextRetryAt: at}
		spec := RetrySpec{MaxRetries: rapid.Int32().Draw(t, "maxRetries"), MinBackoff: 60, ExecutionTimeout: 120}
		var run *Run
		if rapid.Bool().Draw(t, "run") {
			run = &Run{StartedAt: at, Instance: str.Draw(t, "instance"), Build: str.Draw(t, "build")}
		}
		rec := Recoverability(rapid.SampledFrom([]string{"", "RECOVERABLE", "UNRECOVERABLE", "UNKNOWN"}).Draw(t, "recoverable"))
		attempt := rapid.Int32().Draw(t, "attempt")
		events := []Event{
			ExecutionFailedCreated{EventID: id, Function: fn, Error: e, ExecuteAt: at, RetryState: state, RetrySpec: spec, Recoverable: rec, Run: run},
			CompensationPrepared{EventID: id, Function: fn, RetryState: state},
			ExecutionFailedApplied{Error: e, ExecuteAt: at, Recoverable: rec, Attempt: attempt, Run: run},
			ExecutionSuccessApplied{ExecuteAt: at, Attempt: attempt, Run: run},
			RetrySpecApplied{MaxRetries: spec.MaxRetries, MinBackoff: 60, ExecutionTimeout: 120, Jitter: rapid.Float64().Draw(t, "jitter")},
			FunctionChanged{Name: fn.Name, ProcessorName: fn.ProcessorName, ContextName: fn.ContextName, FunctionKind: KindStateEvent},
			RecoverableMarked{Recoverable: rec},
		}
		for _, ev := range events {
			want, wantErr := json.Marshal(ev)
			_, got, err := EncodeEvent(ev)
			same(t, ev.EventName(), want, wantErr, got, err)
		}
		snap := snapshot{State: State{ID: str.Draw(t, "id"), EventID: id, Function: fn, Error: e, ExecuteAt: at, RetrySpec: spec, RetryState: state,
			Status: StatusFailed, Recoverable: rec, PreparedVersion: rapid.Uint64().Draw(t, "prepared")},
			CommandIDs: rapid.SliceOf(str).Draw(t, "commandIDs")}
		want, wantErr := json.Marshal(struct {
			State      plainState `json:"state"`
			CommandIDs []string   `json:"commandIds,omitempty"`
		}{plainState(snap.State), snap.CommandIDs})
		got, err := snap.encode()
		same(t, "snapshot", want, wantErr, got, err)
	})
}

func same(t *rapid.T, what string, want []byte, wantErr error, got []byte, err error) {
	if wantErr != nil {
		if err == nil {
			t.Fatalf("%s: Marshal fails with %v, encodeWire wrote %s", what, wantErr, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: Marshal wrote %s, encodeWire fails with %v", what, want, err)
	}
	stored := func(b []byte) string {
		v := jsontext.Value(slices.Clone(b))
		if err := v.Format(); err != nil {
			t.Fatalf("%s: %v in %q", what, err, b)
		}
		return string(v)
	}
	if stored(want) != stored(got) {
		t.Fatalf("%s: Marshal wrote\n%q\nencodeWire wrote\n%q", what, want, got)
	}
}
