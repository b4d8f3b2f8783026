package processor

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
)

// maxHoldValue bounds a stored hold: MaxHeld references, MaxHoldAudit
// skips and the head take well under it; JetStream's default largest
// message is the same.
const maxHoldValue = 1 << 20

// maxClaimAhead is the furthest after now a claim may end: an instance
// claims a release for AckWait, and renews it every third of that.
const maxClaimAhead = kvstore.MaxAhead

// maxHeldRead bounds the events a stored hold may hold: MaxHeld is what
// the processor adds up to; a hold written with more (by another program)
// is still released, in chunks, but never grows.
const maxHeldRead = 4 * MaxHeld

// maxEventIndex bounds a held event's index in its stream.
const maxEventIndex = 1 << 16

func holdSpec(replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: HoldBucket, Description: "amends ordering holds: one key per (function, aggregate)",
		History: 1, Replicas: max(replicas, 1), Storage: jetstream.FileStorage}, MaxValue: maxHoldValue}
}

var holdCodec = kvstore.Codec[api.Hold]{Decode: func(e kvstore.Entry) (api.Hold, error) { return DecodeHold(e.Key, e.Value, e.Now) }}

// holdKeyParts is what a hold's key says: its function and aggregate.
type holdKeyParts struct{ context, processor, function, aggregateType, aggregateID string }

// parseHoldKey reverses HoldKey: four names and the base64url aggregate
// id, dot-separated.
func parseHoldKey(key string) (holdKeyParts, error) {
	toks := strings.Split(key, ".")
	if len(toks) != 5 {
		return holdKeyParts{}, kvstore.Invalid("key", "has %d dot-separated tokens; a hold's key is context.processor.function.aggregateType.base64url(aggregateId)", len(toks))
	}
	for i, field := range []string{"context", "processor", "function", "aggregateType"} {
		if err := eventstore.ValidateName(field, toks[i]); err != nil {
			return holdKeyParts{}, kvstore.Invalid("key", "%s", reason(err))
		}
	}
	id, err := base64.RawURLEncoding.DecodeString(toks[4])
	if err != nil || base64.RawURLEncoding.EncodeToString(id) != toks[4] {
		return holdKeyParts{}, kvstore.Invalid("key", "its last token %s is not a base64url aggregate id", kvstore.Quote(toks[4]))
	}
	if err := eventstore.ValidateID("aggregateId", string(id)); err != nil {
		return holdKeyParts{}, kvstore.Invalid("key", "%s", reason(err))
	}
	return holdKeyParts{toks[0], toks[1], toks[2], toks[3], string(id)}, nil
}

// DecodeHold reads the hold stored under key, validating every field at
// now: the key is the hold's own (HoldKey of its function and
// aggregate); the head names a record and an event, at a version from 1
// (a recovered hold has no head record); at most 4·MaxHeld events are held,
// each after the head, in version and index order, none twice; at most
// MaxHoldAudit skips; audits with an actor, a reason and a time before
// now. A claim that ends more than a day after now (an instance claims for
// AckWait) is dropped as absent and the entry reported: it could freeze
// the release for ever. An error names the field; the processor replaces
// such a hold (see holdRuntime.repair) and never acts on it.
func DecodeHold(key string, value []byte, now time.Time) (api.Hold, error) {
	k, err := parseHoldKey(key)
	if err != nil {
		return api.Hold{}, err
	}
	var h api.Hold
	if err := json.Unmarshal(value, &h); err != nil {
		return api.Hold{}, kvstore.Invalid("", "not a hold in JSON: %v", err)
	}
	if h.Context != k.context || h.Processor != k.processor || h.Function != k.function || h.AggregateType != k.aggregateType || h.AggregateID != k.aggregateID {
		return api.Hold{}, kvstore.Invalid("key", "is not the hold's own key %s", kvstore.QuoteKey(h.Key()))
	}
	if err := checkHead(&h, now); err != nil {
		return api.Hold{}, kvstore.In("head", err)
	}
	if err := checkHelds(&h, now); err != nil {
		return api.Hold{}, err
	}
	if err := checkReleaseAudit(&h, now); err != nil {
		return api.Hold{}, err
	}
	ignored, err := checkClaim(&h.Claim, now)
	if err != nil {
		return api.Hold{}, err
	}
	return h, ignored
}

// checkClaim checks a stored claim (of a hold's or a range replay's
// release) at now: an owner name, and an end at most maxClaimAhead after
// now. A claim that ends later is dropped (*c = nil) and ignored is the
// kvstore.Ignore to report: it could freeze the release for ever.
func checkClaim(c **api.HoldClaim, now time.Time) (ignored, err error) {
	if *c == nil {
		return nil, nil
	}
	if err := kvstore.Name("claim.owner", (*c).Owner, 256); err != nil {
		return nil, err
	}
	if err := kvstore.Within("claim.until", (*c).Until, now, maxClaimAhead); err != nil {
		*c = nil
		return kvstore.Ignore("claim.until", "%s", strings.TrimPrefix(err.Error(), "claim.until: ")), nil
	}
	return nil, nil
}

// checkHelds checks the held events (after the head, in version and index
// order, none twice, at most maxHeldRead) and the skips (at most
// MaxHoldAudit).
func checkHelds(h *api.Hold, now time.Time) error {
	if len(h.Held) > maxHeldRead {
		return kvstore.Invalid("held", "has %d events, over the limit of %d", len(h.Held), maxHeldRead)
	}
	seen := make(map[string]bool, len(h.Held))
	for i, r := range h.Held {
		field := "held[" + strconv.Itoa(i) + "]"
		if err := checkHeld(r, now); err != nil {
			return kvstore.In(field, err)
		}
		switch {
		case seen[r.EventID] || r.EventID == h.Head.EventID:
			return kvstore.Invalid(field+".eventId", "%s is held twice, or is the head's", kvstore.Quote(r.EventID))
		case h.Head.Version > 0 && r.Version < h.Head.Version:
			return kvstore.Invalid(field+".version", "%d is before the head's version %d", r.Version, h.Head.Version)
		case i > 0 && (r.Version < h.Held[i-1].Version || r.Version == h.Held[i-1].Version && r.Index <= h.Held[i-1].Index):
			return kvstore.Invalid(field, "is out of version and index order")
		}
		seen[r.EventID] = true
	}
	return checkSkipped(h, now)
}

// checkSkipped checks the events skipped on hold h, each with its audit.
func checkSkipped(h *api.Hold, now time.Time) error {
	if len(h.Skipped) > MaxHoldAudit {
		return kvstore.Invalid("skipped", "has %d entries, over the limit of %d", len(h.Skipped), MaxHoldAudit)
	}
	for i, sk := range h.Skipped {
		field := "skipped[" + strconv.Itoa(i) + "]"
		if err := checkHeld(sk.HeldEvent, now); err != nil {
			return kvstore.In(field, err)
		}
		if err := checkAudit(sk.HoldAudit, now); err != nil {
			return kvstore.In(field, err)
		}
	}
	return nil
}

func checkHead(h *api.Hold, now time.Time) error {
	hd := h.Head
	if h.Recovered != nil && hd.Record == "" {
		return kvstore.Past("since", hd.Since, now, false) // a recovered hold's head is unknown
	}
	if err := eventstore.ValidateID("record", hd.Record); err != nil {
		return kvstore.Invalid("record", "%s", reason(err))
	}
	if err := eventstore.ValidateID("eventId", hd.EventID); err != nil {
		return kvstore.Invalid("eventId", "%s", reason(err))
	}
	if hd.Version < 1 {
		return kvstore.Invalid("version", "must be at least 1, got %d", hd.Version)
	}
	return kvstore.Past("since", hd.Since, now, false)
}

func checkHeld(r api.HeldEvent, now time.Time) error {
	if err := eventstore.ValidateID("eventId", r.EventID); err != nil {
		return kvstore.Invalid("eventId", "%s", reason(err))
	}
	if r.Version < 1 {
		return kvstore.Invalid("version", "must be at least 1, got %d", r.Version)
	}
	if !bounds.Within(r.Index, 0, maxEventIndex) {
		return kvstore.Invalid("index", "must be from 0 to %d, got %d", maxEventIndex, r.Index)
	}
	return kvstore.Past("heldAt", r.HeldAt, now, true)
}

func checkAudit(a api.HoldAudit, now time.Time) error {
	if err := kvstore.Line("actor", a.Actor, 256, true); err != nil {
		return err
	}
	if err := kvstore.Line("reason", a.Reason, 2048, true); err != nil {
		return err
	}
	return kvstore.Past("at", a.At, now, false)
}

// recoveredHold is the hold written in place of the stored value of key
// (at revision rev) that did not validate (why): the function and
// aggregate its key names, no head record, and nothing held yet, so the
// aggregate's next events are held until an operator releases it.
func recoveredHold(k holdKeyParts, rev uint64, why string, now time.Time) api.Hold {
	ms := max(now.UnixMilli(), 1)
	return api.Hold{Context: k.context, Processor: k.processor, Function: k.function, AggregateType: k.aggregateType, AggregateID: k.aggregateID,
		Head:      api.HoldHead{Since: ms},
		Recovered: &api.HoldRecovery{Revision: rev, Reason: clipText(why, 2000), At: ms}}
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// checkReleaseAudit checks who released hold h and why, and why it was
// recovered, where it says so.
func checkReleaseAudit(h *api.Hold, now time.Time) error {
	if h.Released != nil {
		if err := checkAudit(*h.Released, now); err != nil {
			return kvstore.In("released", err)
		}
	}
	if h.Recovered == nil {
		return nil
	}
	if err := kvstore.Text("recovered.reason", h.Recovered.Reason, 2048, true); err != nil {
		return err
	}
	return kvstore.Past("recovered.at", h.Recovered.At, now, false)
}
