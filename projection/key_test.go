package projection_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/projection"
)

// kvKey is what JetStream accepts as a KV key.
var kvKey = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

func FuzzKeyRoundTrip(f *testing.F) {
	for _, s := range []string{"0ea40363-d017-46b7-8da9-1f890bb5c2f9", "a.b", "=x", "ünï cödé", ">", "*", "~", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		key, err := projection.EncodeKey(id)
		if projection.CheckID(id) != nil {
			require.ErrorIs(t, err, projection.ErrInvalidQuery)
			return
		}
		require.NoError(t, err)
		require.Regexp(t, kvKey, key, "a valid KV key")
		back, err := projection.DecodeKey(key)
		require.NoError(t, err)
		require.Equal(t, id, back)
	})
}

func TestEncodeKeyRefusesWhatCannotBeARecordID(t *testing.T) {
	long := strings.Repeat("x", eventstore.MaxIDLength)
	for name, id := range map[string]string{
		"empty": "", "over 256 bytes": long + "x", "4000 characters": strings.Repeat("a", 4000),
		"not UTF-8": "a\xffb", "control character": "a\nb", "DEL": "a\x7f",
	} {
		_, err := projection.EncodeKey(id)
		require.ErrorIs(t, err, projection.ErrInvalidQuery, name)
	}
	key, err := projection.EncodeKey(long)
	require.NoError(t, err, "256 bytes is the limit, not over it")
	require.Regexp(t, kvKey, key)
}

func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{"abc", "=YS5i", "=", "=YWJj", "a.b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		id, err := projection.DecodeKey(key)
		if err != nil {
			require.ErrorIs(t, err, projection.ErrCorruptView)
			return
		}
		again, err := projection.EncodeKey(id)
		require.NoError(t, err)
		require.Equal(t, key, again, "only canonical keys decode")
	})
}
