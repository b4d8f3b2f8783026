package scheduler

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/kvstore"
	"github.com/amends-dev/amends/processor"
)

// Bounds of a stored release.
const (
	// MaxParkReleaseSteps bounds the step index a stored release may be at;
	// the scheduler also checks it against its own policy.
	MaxParkReleaseSteps = 1000
	maxParkReleaseValue = 256 << 10
	maxHaltBytes        = 4096
)

func parkReleaseSpec(bucket string, replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: progress of deploy releases",
		History: 5, Replicas: replicas, MaxValueSize: maxParkReleaseValue}, MaxValue: maxParkReleaseValue}
}

var parkReleaseCodec = kvstore.Codec[ParkRelease]{Decode: func(e kvstore.Entry) (ParkRelease, error) { return DecodeParkRelease(e.Key, e.Value, e.Now) }}

var phases = []string{PhaseBaseline, PhaseCanary, PhaseSteps, PhaseDone, PhaseHalted}

// DecodeParkRelease reads the release stored under key, validating every
// field at now: the key is the release's processor (context, name as
// releaseKey writes them); the phase is one of the phases; the step is
// from 0 to MaxParkReleaseSteps; the batch, only in the canary and steps
// phases, holds at most MaxReleaseBatch records, each a record id with an
// attempt from 1; the counts are not negative and succeeded plus failed
// is at most released; the times are before now; the builds and the halt
// are short texts. An error names the field (a *kvstore.FieldError); the
// scheduler halts a release that does not decode rather than act on it.
func DecodeParkRelease(key string, value []byte, now time.Time) (ParkRelease, error) {
	parts, err := kvstore.SplitSegments(key, 2)
	if err != nil {
		return ParkRelease{}, kvstore.Invalid("key", "%v; a release's key is its context and processor, base64url, dot-separated", err)
	}
	var r ParkRelease
	if err := json.Unmarshal(value, &r); err != nil {
		return ParkRelease{}, kvstore.Invalid("", "not a release in JSON: %v", err)
	}
	if r.Context != parts[0] || r.Processor != parts[1] {
		return ParkRelease{}, kvstore.Invalid("processor", "%s/%s is not the key's processor %s/%s",
			kvstore.Quote(r.Context), kvstore.Quote(r.Processor), kvstore.Quote(parts[0]), kvstore.Quote(parts[1]))
	}
	for _, c := range []struct{ field, v string }{{"context", r.Context}, {"processor", r.Processor}} {
		if err := kvstore.Name(c.field, c.v, 256); err != nil {
			return ParkRelease{}, err
		}
	}
	if err := checkBuild("build", r.Build, true); err != nil {
		return ParkRelease{}, err
	}
	if err := checkBuild("previousBuild", r.PreviousBuild, false); err != nil {
		return ParkRelease{}, err
	}
	if err := kvstore.OneOf("phase", r.Phase, phases...); err != nil {
		return ParkRelease{}, err
	}
	if err := kvstore.Range("step", r.Step, 0, MaxParkReleaseSteps); err != nil {
		return ParkRelease{}, err
	}
	if err := kvstore.Past("startedAt", r.StartedAt, now, false); err != nil {
		return ParkRelease{}, err
	}
	if err := kvstore.Past("updatedAt", r.UpdatedAt, now, true); err != nil {
		return ParkRelease{}, err
	}
	if len(r.Batch) > 0 && r.Phase != PhaseCanary && r.Phase != PhaseSteps {
		return ParkRelease{}, kvstore.Invalid("batch", "a release in phase %s has no batch under way, got %d records", r.Phase, len(r.Batch))
	}
	if len(r.Batch) > MaxReleaseBatch {
		return ParkRelease{}, kvstore.Invalid("batch", "has %d records, over the limit of %d", len(r.Batch), MaxReleaseBatch)
	}
	for i, b := range r.Batch {
		field := "batch[" + strconv.Itoa(i) + "]"
		if err := eventstore.ValidateID(field+".id", b.ID); err != nil {
			return ParkRelease{}, kvstore.Invalid(field+".id", "%v", err)
		}
		if b.Attempt < 1 {
			return ParkRelease{}, kvstore.Invalid(field+".attempt", "must be at least 1, got %d", b.Attempt)
		}
	}
	switch {
	case r.Released < 0 || r.Succeeded < 0 || r.Failed < 0:
		return ParkRelease{}, kvstore.Invalid("released", "the counts must not be negative, got released %d, succeeded %d, failed %d", r.Released, r.Succeeded, r.Failed)
	case r.Succeeded > r.Released || r.Failed > r.Released-r.Succeeded:
		return ParkRelease{}, kvstore.Invalid("released", "succeeded %d plus failed %d is more than released %d", r.Succeeded, r.Failed, r.Released)
	}
	if err := kvstore.Text("halt", r.Halt, maxHaltBytes, false); err != nil {
		return ParkRelease{}, err
	}
	return r, nil
}

func checkBuild(field string, b processor.Build, required bool) error {
	if required && b.Version == "" && b.Revision == "" {
		return kvstore.Invalid(field, "has neither a version nor a revision")
	}
	if err := kvstore.Text(field+".version", b.Version, processor.MaxBuildText, false); err != nil {
		return err
	}
	return kvstore.Text(field+".revision", b.Revision, processor.MaxBuildText, false)
}
