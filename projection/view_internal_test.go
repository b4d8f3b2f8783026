package projection

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeView writes the bytes json.Marshal writes, for every kind of
// view, with characters encoding/json escapes and extreme numbers.
func TestEncodeViewWritesWhatJSONMarshalWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		v := randomView(r, i)
		switch i % 4 {
		case 1:
			v.State.Error.ErrorMsg = "<a href=\"x\">&amp;</a>\u2028\u2029\t\x01é"
			v.State.Error.StackTrace = "line 1\nline 2 \\ \"quoted\""
		case 2:
			v.Version, v.UpdatedAt, v.Seq = math.MaxUint64, math.MinInt64, math.MaxUint64
		case 3:
			v.UpdatedAt = -1
		}
		want, err := json.Marshal(&v)
		require.NoError(t, err)
		got, err := appendView(&v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}
