package scheduler

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/rollout"
)

// Bounds of a stored release.
const (
	// MaxParkReleaseSteps bounds the step index a stored release may be at;
	// the scheduler also checks it against its own policy.
	MaxParkReleaseSteps = 1000
	maxParkReleaseValue = 256 << 10
)

func parkReleaseSpec(bucket string, replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: progress of deploy releases",
		History: 5, Replicas: replicas, MaxValueSize: maxParkReleaseValue}, MaxValue: maxParkReleaseValue}
}

var parkReleaseCodec = kvstore.Codec[ParkRelease]{Decode: func(e kvstore.Entry) (ParkRelease, error) { return DecodeParkRelease(e.Key, e.Value, e.Now) }}

// releaseBounds are what a stored release may hold beside the rules of
// every rollout: its own phase, baseline, and steps up to
// MaxParkReleaseSteps; it is not paced.
var releaseBounds = rollout.Bounds{Phases: []string{PhaseBaseline}, MaxStep: MaxParkReleaseSteps}

// DecodeParkRelease reads the release stored under key, validating every
// field at now: the key is the release's processor (context, name as
// releaseKey writes them); the builds are short texts, the current one
// set; it was started; and its progress passes rollout.Progress.Check
// (phase, step up to MaxParkReleaseSteps, batch, counts, times, halt). An
// error names the field (a *kvstore.FieldError); the scheduler halts a
// release that does not decode rather than act on it.
func DecodeParkRelease(key string, value []byte, now time.Time) (ParkRelease, error) {
	if len(value) > maxParkReleaseValue {
		return ParkRelease{}, kvstore.Invalid("", "the value is %d bytes, over the limit of %d", len(value), maxParkReleaseValue)
	}
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
	if err := kvstore.Past("startedAt", r.StartedAt, now, false); err != nil {
		return ParkRelease{}, err
	}
	if err := r.Progress.Check(now, releaseBounds); err != nil {
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
