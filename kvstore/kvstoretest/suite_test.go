package kvstoretest_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
)

// tally is the value of the suite's own store: a name and a count from 0
// to 100, stored under "t.<name>".
type tally struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func decodeTally(e kvstore.Entry) (tally, error) {
	var v tally
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return tally{}, kvstore.Invalid("", "not a tally in JSON: %v", err)
	}
	if e.Key != "t."+v.Name {
		return tally{}, kvstore.Invalid("key", "%s is not t.<name> of %s", kvstore.QuoteKey(e.Key), kvstore.Quote(v.Name))
	}
	if err := kvstore.Range("n", v.N, 0, 100); err != nil {
		return tally{}, err
	}
	return v, nil
}

// broken are stores the suite must fail, by the check that must fail.
var broken = map[string]struct {
	check string
	codec kvstore.Codec[tally]
}{
	"lenient": {"refuses_bad_values_on_read", kvstore.Codec[tally]{Decode: func(e kvstore.Entry) (tally, error) {
		var v tally
		_ = json.Unmarshal(e.Value, &v)
		return v, nil
	}}},
	"panics": {"decoder_never_panics", kvstore.Codec[tally]{Decode: func(e kvstore.Entry) (tally, error) {
		if len(e.Value) == 3 {
			panic("three bytes")
		}
		return decodeTally(e)
	}}},
	"lossy": {"round_trip", kvstore.Codec[tally]{Decode: decodeTally, Encode: func(v tally) ([]byte, error) {
		return json.Marshal(tally{Name: v.Name, N: v.N / 2 * 2})
	}}},
	"vague": {"refuses_bad_values_on_read", kvstore.Codec[tally]{Decode: func(e kvstore.Entry) (tally, error) {
		v, err := decodeTally(e)
		if err != nil {
			return tally{}, kvstore.Invalid("", "bad")
		}
		return v, nil
	}}},
}

func tallyCase(c kvstore.Codec[tally]) kvstoretest.Case[tally] {
	return kvstoretest.Case[tally]{
		Spec:  kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: "tallies", History: 3}, MaxValue: 1 << 10},
		Codec: c,
		Samples: []kvstoretest.Sample[tally]{
			{Key: "t.a", Value: tally{Name: "a", N: 1}}, {Key: "t.a", Value: tally{Name: "a", N: 2}}, {Key: "t.b", Value: tally{Name: "b", N: 3}},
		},
		Bad: []kvstoretest.Bad{
			{Name: "over the range", Key: "t.a", Value: []byte(`{"name":"a","n":101}`), Field: "n"},
			{Name: "under another key", Key: "t.b", Value: []byte(`{"name":"a","n":1}`), Field: "key"},
			{Name: "negative", Key: "t.c", Value: []byte(`{"name":"c","n":-1}`), Field: "n"},
		},
	}
}

func TestAConformingStorePasses(t *testing.T) {
	kvstoretest.Run(t, natstest.New(t).JetStream(), tallyCase(kvstore.Codec[tally]{Decode: decodeTally}))
}

// The suite's checks can fail: each broken store, run in a child
// process, fails the check it breaks.
func TestBrokenStoresFail(t *testing.T) {
	if name := os.Getenv("KVSTORETEST_BROKEN"); name != "" {
		kvstoretest.Run(t, natstest.New(t).JetStream(), tallyCase(broken[name].codec))
		return
	}
	for name, b := range broken {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoresFail$", "-test.v")
			cmd.Env = append(os.Environ(), "KVSTORETEST_BROKEN="+name)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite passed a %s store:\n%s", name, out)
			assert.Contains(t, string(out), "--- FAIL: TestBrokenStoresFail/"+b.check, "%s", out)
		})
	}
}
