package projection

import (
	"encoding"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
)

// requireSameAsMarshalJSON fails unless appendState writes what State's
// MarshalJSON writes for s, and fails where it fails.
func requireSameAsMarshalJSON(t testing.TB, s *aggregate.State) {
	t.Helper()
	want, wantErr := s.MarshalJSON()
	got, err := appendState(nil, s)
	if wantErr != nil {
		require.Error(t, err, "MarshalJSON fails with %v", wantErr)
		return
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func TestAppendStateWritesWhatMarshalJSONWrites(t *testing.T) {
	var ascii []byte
	for c := range 0x80 {
		ascii = append(ascii, byte(c))
	}
	texts := []string{"", "plain", string(ascii), "<a href=\"x\">&amp;</a>", "\u2028\u2029\u202a", "é ü 😀 \U0010ffff",
		"\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\\u0041 \\", "\x7f\x00"}
	floats := []float64{0, math.Copysign(0, -1), 0.1, 0.5, 1, -1, 1e-6, 9.99e-7, 1e-7, -1e-9, 1e20, 1e21, -1e21, 123456789e13,
		math.SmallestNonzeroFloat64, math.MaxFloat64, 1.0 / 3, math.NaN(), math.Inf(1), math.Inf(-1)}
	r := rand.New(rand.NewPCG(9, 10))
	for i, text := range texts {
		for j, jitter := range floats {
			v := randomView(r, i*100+j)
			s := &v.State
			s.ID, s.Error.ErrorMsg, s.Error.StackTrace, s.Function.Name, s.EventID.AggregateID.TenantID = text, text, text+"x", text, text
			s.Status, s.Recoverable, s.Function.FunctionKind = aggregate.Status(text), aggregate.Recoverability(text), aggregate.FunctionKind(text)
			s.RetrySpec.Jitter = jitter
			if j%2 == 0 {
				s.EventID.Seq, s.PreparedVersion, s.RetrySpec.MaxBackoff = math.MaxUint64, 7, math.MinInt32
				s.Error.Fingerprint = text + "fp"
				s.Error.BindingErrors = []aggregate.BindingError{{Name: text, Msg: "m"}, {Name: "", Msg: text}}
				s.Error.ErrorCode = "Ok"
				s.RetryState = aggregate.RetryState{Retries: math.MinInt32, RetryAt: math.MinInt64, TimeoutAt: math.MaxInt64, NextRetryAt: -1}
			}
			requireSameAsMarshalJSON(t, s)
		}
	}
	requireSameAsMarshalJSON(t, &aggregate.State{})
}

// FuzzAppendState: for any texts and numbers, appendState writes what
// MarshalJSON writes.
func FuzzAppendState(f *testing.F) {
	f.Add("rec-1", "boom <&>", "FAILED", 0.25, int64(-5), uint64(3), int32(2))
	f.Add("\xff\u2028", "\x00\x1f\"\\", "", 1e-9, int64(math.MaxInt64), uint64(0), int32(-1))
	f.Fuzz(func(t *testing.T, id, msg, status string, jitter float64, at int64, seq uint64, retries int32) {
		v := randomView(rand.New(rand.NewPCG(seq, uint64(at))), 1)
		s := &v.State
		s.ID, s.Error.ErrorMsg, s.Error.StackTrace, s.Status, s.Error.Fingerprint = id, msg, status+msg, aggregate.Status(status), status
		s.RetrySpec.Jitter, s.ExecuteAt, s.EventID.Seq, s.PreparedVersion, s.RetryState.Retries, s.RetrySpec.MaxBackoff = jitter, at, seq, seq/2, retries, retries
		if len(msg) > 2 {
			s.Error.BindingErrors = []aggregate.BindingError{{Name: msg[:2], Msg: id}}
		}
		requireSameAsMarshalJSON(t, s)
	})
}

// fillEvery sets every field reachable from v to a non-zero value.
func fillEvery(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillEvery(v.Field(i))
		}
	case reflect.String:
		v.SetString("x<" + v.Type().Name())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillEvery(v.Index(i))
		}
	default:
		panic("fillEvery: add the kind " + v.Kind().String())
	}
}

// A field added to State is written by MarshalJSON; this fails until
// appendState writes it too.
func TestAppendStateWritesEveryField(t *testing.T) {
	var s aggregate.State
	fillEvery(reflect.ValueOf(&s).Elem())
	requireSameAsMarshalJSON(t, &s)
}

// readsBack knows which of State's fields the reader parses with a method
// of their own (and can refuse): a new one fails this until readsBack
// checks it.
func TestReadsBackKnowsEveryFieldTheReaderParses(t *testing.T) {
	text := reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonV1 := reflect.TypeFor[json.Unmarshaler]()
	var parsed []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for i := range ty.NumField() {
			f := ty.Field(i)
			if p := reflect.PointerTo(f.Type); p.Implements(text) || p.Implements(jsonV1) {
				parsed = append(parsed, f.Type.Name())
			}
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type)
			case reflect.Slice:
				if f.Type.Elem().Kind() == reflect.Struct {
					walk(f.Type.Elem())
				}
			}
		}
	}
	walk(reflect.TypeFor[aggregate.State]())
	require.ElementsMatch(t, []string{"FunctionKind", "Status", "Recoverability"}, parsed,
		"readsBack checks exactly these; a new field with its own parser needs a check there")
}
