package jsonlex_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/jsonlex"
)

// stringOf scans doc as one string: its value, and whether the scanner
// took it whole.
func stringOf(doc []byte) (text string, value []byte, ok bool) {
	s := jsonlex.NewScanner(doc)
	t, ok := s.String()
	if !ok || !s.Done() {
		return "", nil, false
	}
	var buf []byte
	s = jsonlex.NewScanner(doc)
	v, ok2 := s.StringInto(&buf)
	if !ok2 {
		panic("StringInto refused what String took")
	}
	return t.String(), v, true
}

func TestStringReadsWhatUnmarshalReads(t *testing.T) {
	for _, doc := range []string{`""`, `"a"`, `"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"`, "\"é😀\"", `"\u00E9"`, `"x\u0000y"`, `"<&>"`,
		`"a long string without an escape, over eight bytes"`, `"a long string with one \n escape in it, over eight bytes"`} {
		got, value, ok := stringOf([]byte(doc))
		require.True(t, ok, "%s", doc)
		var want string
		require.NoError(t, json.Unmarshal([]byte(doc), &want))
		assert.Equal(t, want, got, "%s", doc)
		assert.Equal(t, want, string(value), "%s", doc)
	}
	for _, doc := range []string{``, `"`, `"a`, `a"`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\x"`, `"\u12"`, "\"\t\"", "\"\xff\"",
		"\"a string over eight bytes \xc3 cut\"", "\"\\n then bad \xe2\x82 UTF-8\""} {
		_, _, ok := stringOf([]byte(doc))
		assert.False(t, ok, "%q", doc)
	}
}

// FuzzString: the scanner never takes a string Unmarshal refuses, and
// reads the same value; it takes every string AppendString writes.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9"`, `"\ud83d\ude00"`, "\"\xff\"", `"\"\\"`, "hello <&> \u2028 \xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if got, value, ok := stringOf(doc); ok {
			var want string
			require.NoError(t, json.Unmarshal(doc, &want), "the scanner took %q", doc)
			require.True(t, jsontext.Value(doc).IsValid(), "the scanner took %q, which json/v2 refuses", doc)
			require.Equal(t, want, got)
			require.Equal(t, want, string(value))
		}
		enc := jsonlex.AppendString(nil, string(doc))
		want, err := json.Marshal(string(doc))
		require.NoError(t, err)
		require.Equal(t, string(want), string(enc), "AppendString writes what encoding/json writes")
		_, _, ok := stringOf(enc)
		require.True(t, ok, "the scanner takes what AppendString writes: %q", enc)
	})
}

func TestAppendFloatWritesWhatMarshalWrites(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 1e-7, 1e-6, 1e20, 1e21, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, -2.5e-9} {
		got, err := jsonlex.AppendFloat(nil, f)
		require.NoError(t, err)
		want, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%v", f)
		s := jsonlex.NewScanner(got)
		b, ok := s.Float()
		// Float refuses integer parts over a uint64 and exponents beyond
		// ±270 (left to the library), and reads the rest exactly.
		big := math.Abs(f) >= 1e20 && math.Abs(f) < 1e21 || math.Abs(f) > 1e270 || f != 0 && math.Abs(f) < 1e-270
		assert.Equal(t, !big, ok, "Float of %s", got)
		if ok {
			v, err := strconv.ParseFloat(string(b), 64)
			require.NoError(t, err)
			assert.Equal(t, f, v)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := jsonlex.AppendFloat(nil, f)
		assert.ErrorIs(t, err, jsonlex.ErrUnsupportedFloat)
	}
}

func TestNumbers(t *testing.T) {
	ints := map[string]bool{"0": true, "-1": true, "9223372036854775807": true, "-9223372036854775808": true,
		"9223372036854775808": false, "-9223372036854775809": false, "-0": false, "01": false, "1.0": false, "1e2": false, "-": false, "": false, "+1": false}
	for in, ok := range ints {
		s := jsonlex.NewScanner([]byte(in))
		v, got := s.Int(64)
		assert.Equal(t, ok, got, "Int(64) of %q", in)
		if ok {
			want, _ := strconv.ParseInt(in, 10, 64)
			assert.Equal(t, want, v)
		}
	}
	for in, ok := range map[string]bool{"2147483647": true, "-2147483648": true, "2147483648": false, "-2147483649": false} {
		s := jsonlex.NewScanner([]byte(in))
		_, got := s.Int(32)
		assert.Equal(t, ok, got, "Int(32) of %q", in)
	}
	for in, ok := range map[string]bool{"0": true, "18446744073709551615": true, "18446744073709551616": false, "-1": false, "1.5": false, "1E3": false} {
		s := jsonlex.NewScanner([]byte(in))
		_, got := s.Uint()
		assert.Equal(t, ok, got, "Uint of %q", in)
	}
	for in, ok := range map[string]bool{"0.25": true, "-1e-7": true, "1e270": true, "1e271": false, "1.": false, ".5": false, "1e": false} {
		s := jsonlex.NewScanner([]byte(in))
		_, got := s.Float()
		assert.Equal(t, ok && s.Done(), got && s.Done(), "Float of %q", in)
	}
}

// surelyValid reports whether Value takes doc as one JSON document.
func surelyValid(doc []byte) bool {
	s := jsonlex.NewScanner(doc)
	s.Space()
	if _, ok := s.Value(); !ok {
		return false
	}
	s.Space()
	return s.Done()
}

func TestValueNeverTakesWhatIsValidRefuses(t *testing.T) {
	valid := []string{`{}`, `[]`, `0`, `-0`, `-0.5e+10`, `1E3`, ` {"a" : [ 1 , true , false , null , "x" ] } `, `"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"`,
		"\"é😀\"", `{"a":{"a":{"a":1}}}`, `{"a":1,"b":2}`}
	invalid := []string{``, ` `, `{`, `}`, `{"a":1,"a":2}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `"\ud800"`, `"\udc00"`,
		`"\ud800\u0041"`, `"\x"`, `"\u12"`, "\"\t\"", "\"\xff\"", `tru`, `nul`, `{"a"}`, `{a:1}`, `[1 2]`, `{} {}`, `"a`, `NaN`, `{"a":1 "b":2}`,
		"[\"a long string over eight bytes with \xff in it\"]", "{\"\xc3\":1}"}
	for _, doc := range valid {
		assert.True(t, surelyValid([]byte(doc)), "%s is valid", doc)
		assert.True(t, jsontext.Value(doc).IsValid(), "%s is valid for IsValid too", doc)
	}
	for _, doc := range invalid {
		assert.False(t, surelyValid([]byte(doc)), "%q is not valid", doc)
		assert.False(t, jsontext.Value(doc).IsValid(), "%q is not valid for IsValid either", doc)
	}
	assert.False(t, surelyValid([]byte(`{"\u0061":1,"a":2}`)), "a name with an escape is left to IsValid")
	assert.False(t, surelyValid([]byte(strings.Repeat("[", jsonlex.MaxDepth+2)+strings.Repeat("]", jsonlex.MaxDepth+2))), "deep nesting is left to IsValid")
}

// FuzzValue: Value never takes a document IsValid refuses.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,"\u00e9"],"b":{"c":null}}`, `"\ud83d\ude00"`, `{"a":1,"a":1}`, ` [ true , false ] `, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if surelyValid(doc) && !jsontext.Value(doc).IsValid() {
			t.Fatalf("Value took %q, which IsValid refuses", doc)
		}
	})
}
