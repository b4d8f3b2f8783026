package kvstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSegmentsRoundTrip(t *testing.T) {
	for _, parts := range [][]string{{"shop", "Projector"}, {"", "x"}, {"ü.ö", "a/b c", "~"}} {
		key := Segments(parts...)
		require.NoError(t, ValidKey(key), key)
		got, err := SplitSegments(key, len(parts))
		require.NoError(t, err)
		assert.Equal(t, parts, got)
	}
	_, err := SplitSegments("a.b", 3)
	assert.ErrorContains(t, err, "has 2 dot-separated tokens, want 3")
	_, err = SplitSegments("c2hvcA.!!", 2)
	assert.ErrorContains(t, err, "token 2")
	_, err = SplitSegments("c2hvcA=.eA", 2)
	assert.Error(t, err, "padded base64 is not the canonical token")
}

func TestHashIsTheKeyTheBucketsUsedBefore(t *testing.T) {
	sum := sha256.Sum256([]byte("endpoint\x00key"))
	assert.Equal(t, "d_"+hex.EncodeToString(sum[:20]), Hash("d_", "endpoint", "key"))
	one := sha256.Sum256([]byte("req-1"))
	assert.Equal(t, "b_"+hex.EncodeToString(one[:20]), Hash("b_", "req-1"))
	assert.True(t, IsHash("d_", Hash("d_", "x")))
	assert.False(t, IsHash("d_", "d_"+strings.Repeat("G", 40)))
	assert.False(t, IsHash("d_", "g_"+strings.Repeat("a", 40)))
}

func TestValidKeyIsWhatNatsGoTakes(t *testing.T) {
	for _, k := range []string{"a", "a.b", "a-b_c=d/e", "r-0123456789ab"} {
		assert.NoError(t, ValidKey(k), k)
	}
	for _, k := range []string{"", ".a", "a.", "a..b", "r-ü", "a b", "a*", ">", strings.Repeat("a", MaxKeyBytes+1)} {
		assert.ErrorIs(t, ValidKey(k), ErrInvalidKey, k)
	}
}

// Finding 8 of "derived state never outranks the event store": the error
// showed "has the byte 'Ã'" for an ë, the first of its two bytes taken
// for a character.
func TestValidKeyNamesTheCharacterNotItsFirstByte(t *testing.T) {
	assert.ErrorContains(t, ValidKey("r-ë"), `has 'ë' (bytes c3 ab) at byte 2`)
	assert.ErrorContains(t, ValidKey("a b"), `has ' ' at byte 1`)
	assert.ErrorContains(t, ValidKey("a\xffb"), `has the byte 0xff (not UTF-8) at byte 1`)
}
