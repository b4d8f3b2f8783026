package projection

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCheckView: the views bucket's decoder is decodeView or the fast
// decodeViewFields, then the check; any key and bytes are refused or
// accepted without a panic, and both paths agree on the check whenever
// the fast one reads a view.
func FuzzCheckView(f *testing.F) {
	for _, v := range tableViews() {
		data, err := appendView(&v)
		require.NoError(f, err)
		key, _ := ViewKey(v.State.Function.ProcessorName, v.State.ID) // none without a processor
		f.Add(key, data)
		f.Add(key+"x", data)
		f.Add(key, bytes.Replace(data, []byte(`"name":"`), []byte(`"name":"`+"\x00"), 1))
		f.Add(key, bytes.Replace(data, []byte(`"retries":`), []byte(`"retries":-`), 1))
	}
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		var out viewFields
		ok := decodeViewFields(data, &out)
		v, err := decodeView(data)
		if err != nil {
			require.False(t, ok)
			return
		}
		slow := checkView(key, &v)
		if ok {
			fast := checkFields(key, &out)
			require.Equal(t, slow == nil, fast == nil, "the paths disagree on %q under %q: %v / %v", data, key, slow, fast)
		}
	})
}
