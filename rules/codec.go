package rules

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/kvstore"
)

// maxValueBytes bounds a stored rule that is read back: a bucket written
// by something else cannot make a reader allocate without limit.
const maxValueBytes = 64 << 10

// bucketSpec is the rules bucket.
func bucketSpec(cfg jetstream.KeyValueConfig) kvstore.Spec {
	return kvstore.Spec{Config: cfg, MaxValue: maxValueBytes}
}

// ruleCodec is the rules bucket's codec: DecodeStored, and the stored
// shape.
var ruleCodec = kvstore.Codec[api.Rule]{
	Decode: func(e kvstore.Entry) (api.Rule, error) { return DecodeStored(e.Key, e.Value, e.Now) },
	Encode: func(r api.Rule) ([]byte, error) { return json.Marshal(storedRule{Rule: &r, Audit: r.Audit}) },
}

// storedRule is a Rule as the bucket keeps it: without what is derived or
// filled when the rule is shown (Touched, Live, Matching), and without an
// empty audit. Its fields shadow the Rule's of the same JSON name
// (encoding/json takes the shallower field): Touched, Live and Matching
// are always nil so omitted, Audit is the rule's.
type storedRule struct {
	*api.Rule
	Touched  *struct{}       `json:"touched,omitempty"`
	Live     *struct{}       `json:"live,omitempty"`
	Matching *struct{}       `json:"matching,omitempty"`
	Audit    []api.RuleAudit `json:"audit,omitempty"`
}

// DecodeStored reads the rule stored under key as the store and every
// reader see it, validating every field (at now): the key must be a rule
// id (ValidID) and the rule's id; the rule must pass Validate, except that
// it may have expired; createdAt and the audit's times must be times
// before now (kvstore.MaxAhead of clock skew allowed), removedAt too if
// set; the counts must not be negative; the audit holds 1 to MaxAudit
// entries of op add, remove or apply (a rule without one was not made by
// amends: Store.Add writes the first). A rule that does not is an error
// naming the field (a *kvstore.FieldError), and is never matched: a rule
// written by something else (a hand edit, a bad migration) matches
// nothing rather than acting on half a rule.
func DecodeStored(key string, value []byte, now time.Time) (api.Rule, error) {
	if !ValidID(key) {
		return api.Rule{}, kvstore.Invalid("key", "%s is not a rule id (r- and 12 hexadecimal digits)", kvstore.Quote(key))
	}
	var r api.Rule
	if err := json.Unmarshal(value, &r); err != nil {
		return api.Rule{}, kvstore.Invalid("", "not a rule in JSON: %v", err)
	}
	// Not stored (what another writer put there is not believed).
	r.Touched, r.Live, r.Matching = 0, false, 0
	if r.ID != key {
		return api.Rule{}, kvstore.Invalid("id", "%s is not the rule's key %s", kvstore.Quote(r.ID), key)
	}
	// Validate as given by an operator, but at the rule's creation, so that
	// an expired rule is still a valid one.
	at := now
	if r.ExpiresAt != 0 && r.CreatedAt > 0 && r.CreatedAt < r.ExpiresAt {
		at = time.UnixMilli(r.CreatedAt)
	}
	if err := Validate(&r, at); err != nil {
		return api.Rule{}, fieldOf(err)
	}
	if err := checkStoredTimes(&r, now); err != nil {
		return api.Rule{}, err
	}
	if r.Recorded < 0 || r.Applied < 0 {
		return api.Rule{}, kvstore.Invalid("recorded", "the counts must not be negative, got recorded %d and applied %d", r.Recorded, r.Applied)
	}
	if len(r.Audit) > MaxAudit {
		return api.Rule{}, kvstore.Invalid("audit", "has %d entries, over the limit of %d", len(r.Audit), MaxAudit)
	}
	if len(r.Audit) == 0 {
		return api.Rule{}, kvstore.Unaudited("audit", "is empty: a rule keeps the entry of its creation, with its actor (Store.Add writes it), so this one was not made by amends and is not applied")
	}
	for i, a := range r.Audit {
		if err := checkAudit(a, now); err != nil {
			return api.Rule{}, kvstore.In("audit["+strconv.Itoa(i)+"]", err)
		}
	}
	derive(&r)
	return r, nil
}

func checkAudit(a api.RuleAudit, now time.Time) error {
	if err := kvstore.OneOf("op", a.Op, "add", "remove", "apply"); err != nil {
		return err
	}
	if err := kvstore.Line("actor", a.Actor, MaxNameBytes, false); err != nil {
		return err
	}
	if err := kvstore.Line("reason", a.Reason, 2*MaxReasonBytes, false); err != nil {
		return err
	}
	if a.Records < 0 {
		return kvstore.Invalid("records", "must not be negative, got %d", a.Records)
	}
	return kvstore.Past("at", a.At, now, false)
}

// fieldOf turns Validate's error ("retrySpec is required ...: rules:
// invalid rule") into a field error.
func fieldOf(err error) error {
	msg := strings.TrimSuffix(err.Error(), ": "+ErrInvalidRule.Error())
	field, rest, ok := strings.Cut(msg, " ")
	if !errors.Is(err, ErrInvalidRule) || !ok {
		return kvstore.Invalid("", "%s", msg)
	}
	return kvstore.Invalid(strings.TrimSuffix(field, ":"), "%s", rest)
}

// checkStoredTimes checks a stored rule's creation, removal and expiry.
func checkStoredTimes(r *api.Rule, now time.Time) error {
	if err := kvstore.Past("createdAt", r.CreatedAt, now, false); err != nil {
		return err
	}
	if err := kvstore.Past("removedAt", r.RemovedAt, now, true); err != nil {
		return err
	}
	if r.ExpiresAt != 0 && r.ExpiresAt <= r.CreatedAt {
		return kvstore.Invalid("expiresAt", "%d is not after createdAt %d", r.ExpiresAt, r.CreatedAt)
	}
	return nil
}
