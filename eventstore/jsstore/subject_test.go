package jsstore_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
)

func TestEncodeID(t *testing.T) {
	cases := map[string]string{
		"o-42":       "o-42",
		"A_b-9":      "A_b-9",
		"a.b":        "~YS5i",
		"with space": "~d2l0aCBzcGFjZQ",
		"*":          "~Kg",
		">":          "~Pg",
		"~x":         "~fng",
		"订单":         "~6K6i5Y2V",
	}
	for id, want := range cases {
		tok, err := jsstore.EncodeID(id)
		require.NoError(t, err)
		assert.Equal(t, want, tok, "EncodeID(%q)", id)
		back, err := jsstore.DecodeID(tok)
		require.NoError(t, err)
		assert.Equal(t, id, back)
	}
	_, err := jsstore.EncodeID("")
	assert.ErrorIs(t, err, eventstore.ErrInvalid, "an empty id is rejected")
	for _, bad := range []string{"", "~", "~YQ", "a.b", "~!!", "~YS5i="} {
		_, err := jsstore.DecodeID(bad)
		assert.ErrorIs(t, err, eventstore.ErrInvalid, "DecodeID(%q) must fail", bad)
	}
}

// validToken reports whether tok can be one subject token.
func validToken(tok string) bool {
	return tok != "" && !strings.ContainsAny(tok, ". *>\t\r\n") && utf8.ValidString(tok)
}

func FuzzSubjectCodec(f *testing.F) {
	for _, s := range []string{"o-1", "a.b", " ", "*", ">", "~", "~YQ", "订单", "\x00", "\xff"} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, errA := jsstore.EncodeID(a)
		tb, errB := jsstore.EncodeID(b)
		if a == "" {
			require.Error(t, errA)
			return
		}
		require.NoError(t, errA)
		assert.True(t, validToken(ta), "EncodeID(%q) = %q is not a valid subject token", a, ta)
		back, err := jsstore.DecodeID(ta)
		require.NoError(t, err, "DecodeID(EncodeID(%q))", a)
		assert.Equal(t, a, back, "round trip")
		if errB == nil && a != b {
			assert.NotEqual(t, ta, tb, "ids %q and %q collide", a, b)
		}
	})
}

func FuzzDecodeID(f *testing.F) {
	for _, s := range []string{"o-1", "~YS5i", "~", "~~", "a.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := jsstore.DecodeID(tok)
		if err != nil {
			return
		}
		// Only canonical tokens decode, so decoding is injective.
		again, err := jsstore.EncodeID(id)
		require.NoError(t, err)
		assert.Equal(t, tok, again, "token %q decodes to %q, which encodes differently", tok, id)
	})
}
