package projection

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// diffFields returns the name of the first field of f that differs from
// v's, "" if none does.
func diffFields(v *api.View, f *viewFields) string {
	s := &v.State
	strs := []struct {
		name      string
		got, want string
	}{
		{"id", string(f.id), s.ID},
		{"eventID", string(f.eventID), s.EventID.ID},
		{"aggregateID", string(f.aggregateID), s.EventID.AggregateID.AggregateID},
		{"aggContext", string(f.aggContext), s.EventID.AggregateID.ContextName},
		{"aggName", string(f.aggName), s.EventID.AggregateID.AggregateName},
		{"fnKind", string(f.fnKind), string(s.Function.FunctionKind)},
		{"fnContext", string(f.fnContext), s.Function.ContextName},
		{"fnProcessor", string(f.fnProcessor), s.Function.ProcessorName},
		{"fnName", string(f.fnName), s.Function.Name},
		{"errorCode", string(f.errorCode), s.Error.ErrorCode},
		{"errorMsg", string(f.errorMsg), s.Error.ErrorMsg},
		{"fingerprint", string(f.fingerprint), s.Error.Fingerprint},
		{"status", string(f.status), string(s.Status)},
		{"recoverable", string(f.recoverable), string(s.Recoverable)},
	}
	for _, c := range strs {
		if c.got != c.want {
			return c.name
		}
	}
	switch {
	case f.executeAt != s.ExecuteAt:
		return "executeAt"
	case f.timeoutAt != s.RetryState.TimeoutAt:
		return "timeoutAt"
	case f.nextRetryAt != s.RetryState.NextRetryAt:
		return "nextRetryAt"
	case f.retries != s.RetryState.Retries:
		return "retries"
	case f.maxRetries != s.RetrySpec.MaxRetries:
		return "maxRetries"
	case f.version != v.Version:
		return "version"
	case f.seq != v.Seq:
		return "seq"
	}
	return ""
}

// requireFastEqual checks that decodeViewFields takes data and agrees
// with decodeView.
func requireFastEqual(t testing.TB, data []byte, out *viewFields) {
	t.Helper()
	want, err := decodeView(data)
	require.NoError(t, err, "decodeView must read %s", data)
	require.True(t, decodeViewFields(data, out), "the fast path must take %s", data)
	require.Empty(t, diffFields(&want, out), "field differs from decodeView's for %s", data)
}

// fixedView is a view with distinct, known values, so that tests can
// replace them in its encoding.
func fixedView() api.View {
	return api.View{
		State: aggregate.State{
			ID: "rec-1",
			EventID: aggregate.EventID{
				ID:          "evt-1",
				AggregateID: aggregate.WireAggregateID{ContextName: "shop", AggregateName: "order", AggregateID: "o-1", TenantID: aggregate.DefaultTenantID},
				Version:     14,
			},
			Function:    aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "billing", ProcessorName: "Invoicer", Name: "onOrder"},
			Error:       aggregate.ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "boom", StackTrace: "main.go:1", Fingerprint: "fp"},
			ExecuteAt:   1735000000123,
			RetrySpec:   aggregate.RetrySpec{MaxRetries: 10, MinBackoff: 180, ExecutionTimeout: 120},
			RetryState:  aggregate.RetryState{Retries: 2, RetryAt: 1735000000100, TimeoutAt: 1735000120100, NextRetryAt: 1735000720100},
			Status:      aggregate.StatusFailed,
			Recoverable: aggregate.Recoverable,
		},
		Version: 11, UpdatedAt: 1735000000123, Seq: 77,
	}
}

// tableViews are views of every enum value, with escapes, unicode,
// extreme numbers, empty and present optional parts. (State has no
// attempt history: runs live in the events, not in the view.)
func tableViews() map[string]api.View {
	views := map[string]api.View{"plain": fixedView()}
	with := func(name string, change func(*api.View)) {
		v := fixedView()
		change(&v)
		views[name] = v
	}
	for _, k := range aggregate.FunctionKinds {
		with("kind "+string(k), func(v *api.View) { v.State.Function.FunctionKind = k })
	}
	for _, st := range aggregate.Statuses {
		with("status "+string(st), func(v *api.View) { v.State.Status = st })
	}
	for _, r := range aggregate.Recoverabilities {
		with("recoverable "+string(r), func(v *api.View) { v.State.Recoverable = r })
	}
	with("escapes in names", func(v *api.View) {
		s := &v.State
		s.ID = `rec "1" \ <2> & 3`
		s.EventID.ID = "evt\t1\n"
		s.EventID.AggregateID = aggregate.WireAggregateID{ContextName: "a/b", AggregateName: "<order>", AggregateID: "o&1", TenantID: "\"t\""}
		s.Function = aggregate.FunctionInfo{FunctionKind: aggregate.KindCommand, ContextName: "\x01ctl\x1f", ProcessorName: "p\u2028q\u2029", Name: `\u0041`}
		s.Error = aggregate.ErrorDetails{ErrorCode: "E\"1", ErrorMsg: "open \"x.txt\": no such file\n\tat <main>", StackTrace: "a\nb\\c", Fingerprint: "f<p>"}
	})
	with("unicode", func(v *api.View) {
		s := &v.State
		s.ID = "récord-1"
		s.EventID.AggregateID.AggregateName = "注文"
		s.Function.Name = "on🎉"
		s.Error.ErrorMsg = "échec: ошибка 失败 🙈"
		s.Error.StackTrace = "ü"
	})
	with("invalid UTF-8 written as U+FFFD", func(v *api.View) {
		v.State.Error.ErrorMsg = "bad \xff\xfe byte"
		v.State.Function.Name = "n\xc3"
	})
	with("extreme numbers", func(v *api.View) {
		s := &v.State
		s.ExecuteAt = math.MinInt64
		s.RetryState = aggregate.RetryState{Retries: math.MinInt32, RetryAt: math.MaxInt64, TimeoutAt: math.MaxInt64, NextRetryAt: math.MinInt64}
		s.RetrySpec = aggregate.RetrySpec{MaxRetries: math.MaxInt32, MinBackoff: math.MinInt32, ExecutionTimeout: math.MaxInt32, MaxBackoff: math.MinInt32, Jitter: 1e-7}
		s.EventID.Version, s.EventID.Seq = math.MaxUint64, math.MaxUint64
		s.PreparedVersion = math.MaxUint64
		v.Version, v.UpdatedAt, v.Seq = math.MaxUint64, math.MinInt64, math.MaxUint64
	})
	with("negative numbers", func(v *api.View) {
		s := &v.State
		s.ExecuteAt, s.RetryState.TimeoutAt, s.RetryState.NextRetryAt, s.RetryState.Retries = -1, -2, -3, -4
		s.RetrySpec.MaxRetries, s.RetrySpec.Jitter = -5, -0.5
		v.UpdatedAt = -6
	})
	with("zero numbers", func(v *api.View) {
		v.State.ExecuteAt, v.State.RetryState, v.State.RetrySpec = 0, aggregate.RetryState{}, aggregate.RetrySpec{}
		v.Version, v.UpdatedAt, v.Seq = 1, 0, 0
	})
	with("empty optional parts", func(v *api.View) {
		s := &v.State
		s.EventID.AggregateID = aggregate.WireAggregateID{}
		s.Function = aggregate.FunctionInfo{FunctionKind: aggregate.KindError}
		s.Error = aggregate.ErrorDetails{}
		s.EventID.ID = ""
	})
	with("every optional member present", func(v *api.View) {
		s := &v.State
		s.EventID.Seq = 5
		s.Error.BindingErrors = []aggregate.BindingError{{Name: "a", Msg: "must be \"set\""}, {Name: "<b>", Msg: ""}}
		s.Error.Fingerprint = "0123abcd"
		s.RetrySpec.MaxBackoff, s.RetrySpec.Jitter = 3600, 0.25
		s.PreparedVersion = 9
	})
	with("one binding error and a large jitter", func(v *api.View) {
		v.State.Error.BindingErrors = []aggregate.BindingError{{Name: "x", Msg: "y"}}
		v.State.RetrySpec.Jitter = 1e21
	})
	with("error code Ok", func(v *api.View) { v.State.Error.ErrorCode = "Ok" })
	return views
}

func TestDecodeViewFieldsReadsEncodedViews(t *testing.T) {
	var out viewFields
	for name, v := range tableViews() {
		t.Run(name, func(t *testing.T) {
			data, err := appendView(&v)
			require.NoError(t, err)
			requireFastEqual(t, data, &out)
		})
	}
}

// A field read once does not leak into the next view: an absent
// fingerprint is nil again, escaped strings stay intact when the scratch
// buffer grows.
func TestDecodeViewFieldsReusesOut(t *testing.T) {
	views := tableViews()
	first := views["every optional member present"]
	second := views["empty optional parts"]
	var out viewFields
	for _, v := range []api.View{first, views["escapes in names"], second, views["unicode"], first} {
		data, err := appendView(&v)
		require.NoError(t, err)
		requireFastEqual(t, data, &out)
	}
	data, err := appendView(&second)
	require.NoError(t, err)
	require.True(t, decodeViewFields(data, &out))
	assert.Nil(t, out.fingerprint, "a view without a fingerprint has none")
}

// mutate returns the encoding of fixedView with old replaced by new,
// failing if old is not in it.
func mutate(t testing.TB, old, new string) []byte {
	t.Helper()
	v := fixedView()
	data, err := appendView(&v)
	require.NoError(t, err)
	require.Contains(t, string(data), old, "the mutation must apply")
	return []byte(strings.Replace(string(data), old, new, 1))
}

// refusedViews are inputs decodeView refuses, most of them one change
// away from a canonical view.
func refusedViews(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"empty":                                 nil,
		"null":                                  []byte("null"),
		"array":                                 []byte("[]"),
		"version 0":                             mutate(t, `"version":11,`, `"version":0,`),
		"empty id":                              mutate(t, `"id":"rec-1"`, `"id":""`),
		"duplicate member":                      mutate(t, `"seq":77}`, `"seq":77,"seq":77}`),
		"duplicate state member":                mutate(t, `"isRetryable":true}`, `"isRetryable":true,"isRetryable":true}`),
		"trailing data":                         mutate(t, `"seq":77}`, `"seq":77}x`),
		"trailing object":                       mutate(t, `"seq":77}`, `"seq":77}{}`),
		"invalid UTF-8 in a field":              mutate(t, `"errorMsg":"boom"`, "\"errorMsg\":\"bo\xffom\""),
		"invalid UTF-8 skipped":                 mutate(t, `"stackTrace":"main.go:1"`, "\"stackTrace\":\"main\xc3\""),
		"invalid UTF-8 in a long field":         mutate(t, `"errorMsg":"boom"`, "\"errorMsg\":\"b\xffoom, a longer message\""),
		"invalid UTF-8 in a long skipped field": mutate(t, `"stackTrace":"main.go:1"`, "\"stackTrace\":\"ma\xc3in.go:1 and further frames\""),
		"invalid UTF-8 after an escape":         mutate(t, `"errorMsg":"boom"`, "\"errorMsg\":\"b\\noom, a longer \xe2\x82 message\""),
		"invalid UTF-8 before an escape":        mutate(t, `"errorMsg":"boom"`, "\"errorMsg\":\"b\xe2\x82oom, a longer message\\n\""),
		"lone high surrogate":                   mutate(t, `"errorMsg":"boom"`, `"errorMsg":"b\ud800oom"`),
		"lone low surrogate":                    mutate(t, `"stackTrace":"main.go:1"`, `"stackTrace":"\udc00"`),
		"raw control character":                 mutate(t, `"errorMsg":"boom"`, "\"errorMsg\":\"bo\x01om\""),
		"unknown escape":                        mutate(t, `"errorMsg":"boom"`, `"errorMsg":"bo\xom"`),
		"short unicode escape":                  mutate(t, `"errorMsg":"boom"`, `"errorMsg":"bo\u00"`),
		"retries above int32":                   mutate(t, `"retries":2,`, `"retries":2147483648,`),
		"maxRetries below int32":                mutate(t, `"maxRetries":10,`, `"maxRetries":-2147483649,`),
		"minBackoff above int32":                mutate(t, `"minBackoff":180,`, `"minBackoff":2147483648,`),
		"executeAt above int64":                 mutate(t, `"executeAt":1735000000123,`, `"executeAt":9223372036854775808,`),
		"version above uint64":                  mutate(t, `"version":11,`, `"version":18446744073709551616,`),
		"negative version":                      mutate(t, `"version":11,`, `"version":-1,`),
		"fractional retries":                    mutate(t, `"retries":2,`, `"retries":1.0,`),
		"exponent retries":                      mutate(t, `"retries":2,`, `"retries":1e2,`),
		"leading zero":                          mutate(t, `"retries":2,`, `"retries":02,`),
		"jitter out of float64":                 mutate(t, `"executionTimeout":120}`, `"executionTimeout":120,"jitter":1e400}`),
		"binding error name not string":         mutate(t, `"stackTrace":"main.go:1",`, `"stackTrace":"main.go:1","bindingErrors":[{"name":1,"msg":"x"}],`),
		"empty status":                          mutate(t, `"status":"FAILED"`, `"status":""`),
		"unknown status":                        mutate(t, `"status":"FAILED"`, `"status":"BOGUS"`),
		"unknown recoverable":                   mutate(t, `"recoverable":"RECOVERABLE"`, `"recoverable":"MAYBE"`),
		"unknown function kind":                 mutate(t, `"functionKind":"EVENT"`, `"functionKind":"LAMBDA"`),
		"string for a number":                   mutate(t, `"retries":2,`, `"retries":"2",`),
		"number for a string":                   mutate(t, `"errorCode":"Timeout"`, `"errorCode":5`),
	}
}

func TestDecodeViewFieldsRefusesWhatDecodeViewRefuses(t *testing.T) {
	for name, data := range refusedViews(t) {
		t.Run(name, func(t *testing.T) {
			_, err := decodeView(data)
			require.Error(t, err, "decodeView must refuse %q for the case to mean anything", data)
			var out viewFields
			assert.False(t, decodeViewFields(data, &out), "the fast path must refuse %q", data)
		})
	}
}

func TestDecodeViewFieldsRefusesEveryTruncation(t *testing.T) {
	v := tableViews()["every optional member present"]
	data, err := appendView(&v)
	require.NoError(t, err)
	var out viewFields
	for n := range len(data) {
		assert.False(t, decodeViewFields(data[:n], &out), "the fast path must refuse the first %d bytes", n)
	}
}

// The fast path leaves to decodeView what it is not sure of, even where
// decodeView reads it.
func TestDecodeViewFieldsLeavesOtherShapesToDecodeView(t *testing.T) {
	cases := map[string][]byte{
		"space after a colon":      mutate(t, `"status":"FAILED"`, `"status": "FAILED"`),
		"trailing newline":         mutate(t, `"seq":77}`, "\"seq\":77}\n"),
		"enum in lower case":       mutate(t, `"status":"FAILED"`, `"status":"failed"`),
		"unknown member":           mutate(t, `"seq":77}`, `"seq":77,"extra":1}`),
		"members in another order": mutate(t, `"version":11,"updatedAt":1735000000123,"seq":77}`, `"seq":77,"version":11,"updatedAt":1735000000123}`),
		"null message":             mutate(t, `"errorMsg":"boom"`, `"errorMsg":null`),
		"recoverable absent":       mutate(t, `,"recoverable":"RECOVERABLE"`, ``),
		"negative zero":            mutate(t, `"retries":2,`, `"retries":-0,`),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeView(data)
			require.NoError(t, err, "decodeView reads %s", data)
			var out viewFields
			ok := decodeViewFields(data, &out)
			if name == "negative zero" && ok {
				// -0 is an integer json/v2 reads as 0; taking it is allowed.
				want, _ := decodeView(data)
				require.Empty(t, diffFields(&want, &out))
				return
			}
			assert.False(t, ok, "the fast path leaves %s to decodeView", data)
		})
	}
}

// Escapes encoding/json does not write (surrogate pairs, \/, upper-case
// hex) are read as decodeView reads them.
func TestDecodeViewFieldsUnescapesLikeDecodeView(t *testing.T) {
	cases := map[string][]byte{
		"surrogate pair":    mutate(t, `"errorMsg":"boom"`, `"errorMsg":"b\ud83c\udf89m"`),
		"upper-case hex":    mutate(t, `"id":"rec-1"`, `"id":"r\u00E9c"`),
		"short escapes":     mutate(t, `"fingerprint":"fp"`, `"fingerprint":"\/\b\f\n\r\t\"\\"`),
		"escaped enum":      mutate(t, `"status":"FAILED"`, `"status":"\u0046AILED"`),
		"escape at the end": mutate(t, `"name":"onOrder"`, `"name":"onOrder\u0000"`),
		"only an escape":    mutate(t, `"errorCode":"Timeout"`, `"errorCode":"\u2028"`),
	}
	var out viewFields
	for name, data := range cases {
		t.Run(name, func(t *testing.T) { requireFastEqual(t, data, &out) })
	}
}

// randomString draws a string with the characters encoding/json escapes
// or passes through.
func randomString(r *rand.Rand) string {
	parts := []string{"", "a", "order-1", `"`, `\`, "/", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\u2028", "é", "世界", "🎉", "\xff", "\u007f", "\ufffd"}
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

// Every view the projector can write is read by the fast path: it is
// actually taken on the rebuild.
func TestDecodeViewFieldsTakesEveryEncodedView(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	extremes64 := []int64{0, -1, 1, math.MinInt64, math.MaxInt64}
	extremes32 := []int32{0, -1, 1, math.MinInt32, math.MaxInt32}
	var out viewFields
	taken := 0
	for i := range 3000 {
		v := randomView(r, i)
		s := &v.State
		if i%2 == 1 {
			s.ID = "r" + randomString(r)
			s.EventID.ID, s.EventID.AggregateID.AggregateID = randomString(r), randomString(r)
			s.EventID.AggregateID.ContextName, s.EventID.AggregateID.AggregateName = randomString(r), randomString(r)
			s.Function.ContextName, s.Function.ProcessorName, s.Function.Name = randomString(r), randomString(r), randomString(r)
			s.Error = aggregate.ErrorDetails{ErrorCode: randomString(r), ErrorMsg: randomString(r), StackTrace: randomString(r), Fingerprint: randomString(r)}
			if r.IntN(3) == 0 {
				s.Error.BindingErrors = []aggregate.BindingError{{Name: randomString(r), Msg: randomString(r)}}
			}
			s.ExecuteAt, s.RetryState.TimeoutAt = extremes64[r.IntN(5)], extremes64[r.IntN(5)]
			s.RetryState.Retries, s.RetrySpec.MaxRetries, s.RetrySpec.MaxBackoff = extremes32[r.IntN(5)], extremes32[r.IntN(5)], extremes32[r.IntN(5)]
			s.RetrySpec.Jitter = []float64{0, 1, 0.5, 1e-9, r.Float64()}[r.IntN(5)]
			s.EventID.Seq, s.PreparedVersion = uint64(r.IntN(2))*math.MaxUint64, uint64(r.IntN(3))
		}
		data, err := appendView(&v)
		if err != nil {
			continue // encodeView refuses it: the projector never writes it
		}
		requireFastEqual(t, data, &out)
		taken++
	}
	require.Greater(t, taken, 2900, "nearly every generated view must be writable")
}

// Strings the index does not need are checked, not copied, even with
// escapes.
func TestDecodeViewFieldsDoesNotCopySkippedStrings(t *testing.T) {
	v := withStack(fixedView())
	v.State.Error.ErrorMsg = "plain"
	data, err := appendView(&v)
	require.NoError(t, err)
	require.Contains(t, string(data), `\n\t`, "the stack trace must be escaped for the test to mean anything")
	var out viewFields
	requireFastEqual(t, data, &out)
	assert.Empty(t, out.buf, "the skipped stack trace went to the scratch buffer")
}

func TestDecodeViewFieldsDoesNotAllocate(t *testing.T) {
	views := tableViews()
	views["with a stack trace"] = withStack(fixedView())
	for _, name := range []string{"plain", "escapes in names", "every optional member present", "with a stack trace"} {
		v := views[name]
		data, err := appendView(&v)
		require.NoError(t, err)
		var out viewFields
		require.True(t, decodeViewFields(data, &out), "the fast path must take %s", name)
		allocs := testing.AllocsPerRun(100, func() { decodeViewFields(data, &out) })
		assert.Zero(t, allocs, "decoding %s allocates once the scratch buffer has grown", name)
	}
}

// FuzzDecodeViewFields checks the contract on arbitrary bytes: if the
// fast path takes data, decodeView reads it and agrees; and the fast path
// takes every canonical view (one encodeView writes back byte for byte).
func FuzzDecodeViewFields(f *testing.F) {
	for _, v := range tableViews() {
		data, err := appendView(&v)
		require.NoError(f, err)
		f.Add(data)
		f.Add(bytes.Replace(data, []byte(`"version":`), []byte(`"version":0`), 1))
		f.Add(bytes.Replace(data, []byte(`":"`), []byte(`":"\u`), 1))
		f.Add(data[:len(data)/2])
	}
	for _, data := range refusedViews(f) {
		f.Add(data)
	}
	before := fixedView()
	prev, err := appendView(&before)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		var out viewFields
		// Start from another view's fields, so stale ones would show.
		decodeViewFields(prev, &out)
		ok := decodeViewFields(data, &out)
		v, err := decodeView(data)
		if ok {
			require.NoError(t, err, "the fast path took %q, which decodeView refuses", data)
			require.Empty(t, diffFields(&v, &out), "the fast path disagrees with decodeView on %q", data)
		}
		if err == nil {
			if enc, err := appendView(&v); err == nil && bytes.Equal(enc, data) {
				require.True(t, ok, "the fast path must take the canonical view %q", data)
			}
		}
	})
}
