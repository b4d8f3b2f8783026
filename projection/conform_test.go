package projection

import (
	"math/rand/v2"
	"testing"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
)

// viewCodec is the views bucket's codec as a kvstore.Codec: the writer's
// encodeView and the readers' storedView. The projector and the index
// read and write the bucket through these, not a kvstore.Store: the
// suite holds the pair and the bucket's Spec to the store contract.
var viewCodec = kvstore.Codec[api.View]{
	Decode: func(e kvstore.Entry) (api.View, error) { return storedView(e.Key, e.Value) },
	Encode: func(v api.View) ([]byte, error) { return encodeView(&v) },
}

// The views bucket passes the store conformance suite.
func TestViewsBucketConforms(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	sample := func(i int) kvstoretest.Sample[api.View] {
		v := randomView(r, i)
		v.Seq = v.Version + 10
		key, err := ViewKey(v.State.Function.ProcessorName, v.State.ID)
		if err != nil {
			t.Fatal(err)
		}
		return kvstoretest.Sample[api.View]{Key: key, Value: v}
	}
	a, b, c := sample(1), sample(1), sample(2)
	b.Value.State.Function = a.Value.State.Function // one record, one key
	b.Key = a.Key
	b.Value.Version, b.Value.Seq = a.Value.Version+1, a.Value.Seq+1
	spec, err := viewsSpecOf()
	if err != nil {
		t.Fatal(err)
	}
	other := sample(3).Key
	kvstoretest.Run(t, natstest.New(t).JetStream(), kvstoretest.Case[api.View]{
		Spec: spec, Codec: viewCodec,
		Samples: []kvstoretest.Sample[api.View]{a, b, c},
		Bad: []kvstoretest.Bad{
			{Name: "under another record's key", Key: other, Value: mustEncode(t, a.Value), Field: "state.id"},
			{Name: "version 0", Key: a.Key, Value: []byte(`{"state":{"id":"x"},"version":0}`), Field: ""},
			{Name: "no function", Key: c.Key, Value: []byte(`{"state":{"id":"` + c.Value.State.ID + `"},"version":1}`), Field: "state.function.contextName"},
		},
	})
}

func mustEncode(t *testing.T, v api.View) []byte {
	t.Helper()
	b, err := encodeView(&v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
