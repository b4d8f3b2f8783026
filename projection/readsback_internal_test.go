package projection

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// fullyReadsBack is what every reader does with a view written: decode
// it and check it (checkView).
func fullyReadsBack(v *api.View) (bool, error) {
	data, err := appendView(v)
	if err != nil {
		return false, err
	}
	back, err := decodeView(data)
	if err != nil {
		return false, nil
	}
	key, _ := ViewKey(back.State.Function.ProcessorName, back.State.ID)
	return checkView(key, &back) == nil, nil
}

// requireSameVerdict fails unless encodeView accepts v exactly when the
// full decode of what it writes succeeds.
func requireSameVerdict(t testing.TB, v *api.View) {
	t.Helper()
	want, encErr := fullyReadsBack(v)
	data, err := encodeView(v)
	if encErr != nil {
		require.Error(t, err, "a view that does not encode is refused")
		return
	}
	if want {
		require.NoError(t, err, "the readers accept the view, so encodeView must write it: %+v", v.State)
		_, derr := decodeView(data)
		require.NoError(t, derr)
		return
	}
	require.ErrorIs(t, err, ErrCorruptView, "a reader refuses the view, so encodeView must too: %+v", v.State)
}

func TestReadsBackIsWhatDecodeViewAccepts(t *testing.T) {
	enums := []string{"", "FAILED", "failed", "Prepared", "SUCCEEDED", "ſucceeded", "RECOVERABLE", "unrecoverable", "UNKNOWN",
		"EVENT", "event", "STATE_EVENT", "COMMAND", "SOURCING", "ERROR", "\u212aind", "bogus", "FAILED ", "\xff", "FAIL\xffED", "null"}
	cases := map[string]func(v *api.View){
		"as projected":             func(*api.View) {},
		"no record id":             func(v *api.View) { v.State.ID = "" },
		"version 0":                func(v *api.View) { v.Version = 0 },
		"no status":                func(v *api.View) { v.State.Status = "" },
		"unknown status":           func(v *api.View) { v.State.Status = "DONE" },
		"lower-case status":        func(v *api.View) { v.State.Status = "failed" },
		"no function kind":         func(v *api.View) { v.State.Function.FunctionKind = "" },
		"unknown function kind":    func(v *api.View) { v.State.Function.FunctionKind = "LAMBDA" },
		"no recoverable":           func(v *api.View) { v.State.Recoverable = "" },
		"unknown recoverable":      func(v *api.View) { v.State.Recoverable = "MAYBE" },
		"invalid UTF-8 in a text":  func(v *api.View) { v.State.Error.ErrorMsg = "a\xffb"; v.State.Function.Name = "\xc3" },
		"invalid UTF-8 in an enum": func(v *api.View) { v.State.Status = "FAILED\xff" },
		"extreme numbers": func(v *api.View) {
			v.Version, v.Seq, v.UpdatedAt = math.MaxUint64, math.MaxUint64, math.MinInt64
			v.State.RetrySpec = aggregate.RetrySpec{MaxRetries: math.MinInt32, MinBackoff: math.MaxInt32, MaxBackoff: -1, Jitter: math.SmallestNonzeroFloat64}
			v.State.PreparedVersion = math.MaxUint64
		},
		"huge jitter":            func(v *api.View) { v.State.RetrySpec.Jitter = math.MaxFloat64 },
		"next retry before 1970": func(v *api.View) { v.State.RetryState.NextRetryAt = math.MinInt64 },
		"negative retries":       func(v *api.View) { v.State.RetryState.Retries = -1 },
		"version above sequence": func(v *api.View) { v.Seq = 1; v.Version = 2 },
		"no function name":       func(v *api.View) { v.State.Function.Name = "" },
		"NaN jitter":             func(v *api.View) { v.State.RetrySpec.Jitter = math.NaN() },
		"binding error": func(v *api.View) {
			v.State.Error.BindingErrors = []aggregate.BindingError{{Name: "\"x\"", Msg: "<>&\u2028"}}
		},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			v := randomView(r, 1)
			mutate(&v)
			requireSameVerdict(t, &v)
		})
	}
	t.Run("random enums", func(t *testing.T) {
		for i := range 3000 {
			v := randomView(r, i)
			v.State.Status = aggregate.Status(enums[r.IntN(len(enums))])
			v.State.Function.FunctionKind = aggregate.FunctionKind(enums[r.IntN(len(enums))])
			v.State.Recoverable = aggregate.Recoverability(enums[r.IntN(len(enums))])
			requireSameVerdict(t, &v)
		}
	})
}

func TestEncodeViewRefusesAViewTheReaderRefusesNamingTheField(t *testing.T) {
	v := randomView(rand.New(rand.NewPCG(7, 8)), 1)
	v.State.Function.FunctionKind = "LAMBDA"
	_, err := encodeView(&v)
	require.ErrorIs(t, err, ErrCorruptView)
	require.ErrorContains(t, err, "functionKind must be")
	require.ErrorContains(t, err, `got "LAMBDA"`)
}

// FuzzReadsBack: for any texts, enums and numbers, encodeView writes a
// view exactly when decodeView reads it back.
func FuzzReadsBack(f *testing.F) {
	f.Add("rec-1", "FAILED", "EVENT", "RECOVERABLE", "boom", uint64(1), 0.0, int32(3))
	f.Add("", "", "", "", "", uint64(0), 0.5, int32(-1))
	f.Add("r", "ſucceeded", "state_event", "unknown", "a\xffb", uint64(2), 1e300, int32(0))
	f.Fuzz(func(t *testing.T, id, status, kind, recoverable, msg string, version uint64, jitter float64, retries int32) {
		v := randomView(rand.New(rand.NewPCG(version, uint64(retries))), 1)
		v.State.ID, v.State.Status, v.State.Function.FunctionKind, v.State.Recoverable = id, aggregate.Status(status), aggregate.FunctionKind(kind), aggregate.Recoverability(recoverable)
		v.State.Error.ErrorMsg, v.State.Error.ErrorCode, v.Version = msg, status, version
		v.State.RetrySpec.Jitter, v.State.RetryState.Retries = jitter, retries
		requireSameVerdict(t, &v)
	})
}
