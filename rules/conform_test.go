package rules_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/kvstore/kvstoretest"
	"github.com/amends-dev/amends/rules"
)

// The rules bucket passes the store conformance suite, its hostile rules
// as the bad values.
func TestRulesBucketConforms(t *testing.T) {
	now := t0.Add(time.Hour)
	sample := func(id string, a rules.Action) kvstoretest.Sample[api.Rule] {
		r := byFunction("Timeout", a)
		r.ID, r.Actor, r.CreatedAt = id, "alice", t0.UnixMilli()
		if a == rules.ApplyRetrySpec {
			r.RetrySpec = &aggregate.RetrySpec{MaxRetries: 3, MinBackoff: 1, ExecutionTimeout: 1}
		}
		r.Audit = []api.RuleAudit{{Op: "add", Actor: "alice", Reason: "r", At: t0.UnixMilli()}}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		r, err = rules.DecodeStored(id, b, now) // as a reader sees it
		require.NoError(t, err)
		return kvstoretest.Sample[api.Rule]{Key: id, Value: r}
	}
	c := kvstoretest.Case[api.Rule]{
		Spec:    rules.BucketSpec(jetstream.KeyValueConfig{Bucket: "rules", History: 5}),
		Codec:   rules.RuleCodec,
		Samples: []kvstoretest.Sample[api.Rule]{sample("r-0123456789ab", rules.ApplyRetrySpec), sample("r-0123456789ab", rules.Waive), sample("r-00000000beef", rules.Waive)},
		Now:     func() time.Time { return now },
	}
	for _, h := range hostileRules() {
		if h.key == "r-ü" {
			continue // nats.go will not write it; TestStoredRulesThatDoNotValidateMatchNothing publishes it raw
		}
		c.Bad = append(c.Bad, kvstoretest.Bad{Name: h.name, Key: h.key, Value: []byte(h.value), Field: h.field})
	}
	kvstoretest.Run(t, natstest.New(t).JetStream(), c)
}
