package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rollout"
	"github.com/amends-dev/amends/rules"
)

// Park release defaults.
const (
	DefaultParkReleaseBucket    = "amends_releases"
	DefaultCanary               = 1
	DefaultParkReleaseThreshold = 0.9
	// MaxReleaseBatch bounds the records one pass prepares for a release
	// or a drain; a larger step is prepared over several passes.
	MaxReleaseBatch = rollout.MaxBatch
)

// DefaultParkReleaseSteps are the step sizes after the canary; 0 is "all the
// rest".
var DefaultParkReleaseSteps = []int{1, 5, 20, 0}

// The phases of a park release: PhaseBaseline is its own (the first build
// seen: nothing to release), the others are the rollout's.
const (
	PhaseBaseline = "baseline"
	PhaseCanary   = rollout.PhaseCanary
	PhaseSteps    = rollout.PhaseSteps
	PhaseDone     = rollout.PhaseDone
	PhaseHalted   = rollout.PhaseHalted
)

// ParkReleasePolicy says how records parked until a deploy are released when a
// new build registers: Canary records first (DefaultCanary if 0), then
// steps of the sizes in Steps (DefaultParkReleaseSteps if nil; 0 means all the
// rest), each started only while the success ratio of the last one is at
// least Threshold (DefaultParkReleaseThreshold if 0; from 0 to 1). A canary or
// step below the threshold halts the release: the rollout.Stepped policy.
type ParkReleasePolicy struct {
	Canary    int
	Steps     []int
	Threshold float64
}

func (p ParkReleasePolicy) rollout() rollout.Stepped {
	return rollout.Stepped{Canary: p.Canary, Steps: p.Steps, Threshold: p.Threshold}
}

// ParkRelease is the progress of the release of one processor's parked
// records after a new build registered, as the progress bucket keeps it
// (one key per processor), so that it survives a restart: the processor,
// the builds, and the rollout's progress. Times are epoch ms.
//
// A notifier can watch the bucket (ParkReleases.Watch): a release whose Phase
// becomes PhaseHalted has failed its canary or a step, and Halt says why.
type ParkRelease struct {
	Context       string          `json:"context"`
	Processor     string          `json:"processor"`
	Build         processor.Build `json:"build"`
	PreviousBuild processor.Build `json:"previousBuild"`
	// Progress is the rollout's; its StartedAt is when the build was
	// seen, and the records parked are those whose last failure is older.
	rollout.Progress
}

// ParkReleaseStats counts what the releases did.
type ParkReleaseStats struct {
	Started, Steps, Prepared, Halted, Done uint64
}

type parkReleaseStats struct{ started, steps, prepared, halted, done atomic.Uint64 }

func (r *parkReleaseStats) load() ParkReleaseStats {
	return ParkReleaseStats{Started: r.started.Load(), Steps: r.steps.Load(), Prepared: r.prepared.Load(), Halted: r.halted.Load(), Done: r.done.Load()}
}

// BuildSource lists the live build registrations. *processor.BuildRegistry
// satisfies it.
type BuildSource interface {
	Builds(ctx context.Context) ([]processor.BuildEntry, error)
}

// RecordLister lists records. *projection.Index satisfies it.
type RecordLister interface {
	List(q api.Query) (api.Page, error)
}

var (
	_ BuildSource  = (*processor.BuildRegistry)(nil)
	_ RecordLister = (*projection.Index)(nil)
)

type parkReleaseConfig struct {
	builds   BuildSource
	records  RecordLister
	progress *ParkReleases
	policy   ParkReleasePolicy
	onHalt   func(ParkRelease)
}

// WithParkRelease makes the lease holder (with WithPartitions, the holder
// of each processor's first partition) release the records parked until
// a deploy (WithParkRules, which it needs) when a new build of their
// processor registers in builds: each pass it reads the live builds and,
// per processor, the progress in progress; a newer build than the one
// recorded starts a release (the first build seen is only recorded). The
// release force-prepares, as actor "scheduler" with a reason naming the
// build, a canary of the parked records of that processor whose last
// failure is older than the release, oldest first, and then the steps of
// policy, each once the one before has settled (every record succeeded,
// failed again or timed out) with a success ratio at least the threshold.
// Below it the release halts: the records that failed are marked
// UNRECOVERABLE with the reason (so their history says so), the halt is
// logged, counted (Stats.ParkReleases.Halted), kept in the progress bucket
// and passed to onHalt if it is not nil. The parked records not released
// stay parked for the next build. records reads the record states
// (projection.Index).
func WithParkRelease(builds BuildSource, records RecordLister, progress *ParkReleases, policy ParkReleasePolicy, onHalt func(ParkRelease)) Option {
	return func(o *options) error {
		if builds == nil || records == nil || progress == nil {
			return fmt.Errorf("deploy release needs a build source, a record lister and a progress bucket: %w", ErrInvalidOption)
		}
		if policy.Canary == 0 {
			policy.Canary = DefaultCanary
		}
		if policy.Steps == nil {
			policy.Steps = DefaultParkReleaseSteps
		}
		if policy.Threshold == 0 {
			policy.Threshold = DefaultParkReleaseThreshold
		}
		if err := policy.rollout().Check(); err != nil {
			return fmt.Errorf("release %w: %w", err, ErrInvalidOption)
		}
		policy.Steps = slices.Clone(policy.Steps)
		o.parkRelease = &parkReleaseConfig{builds: builds, records: records, progress: progress, policy: policy, onHalt: onHalt}
		return nil
	}
}

// parkReleaseStep advances the release of every processor this instance
// leads by what one pass does.
func (s *Scheduler) parkReleaseStep(ctx context.Context, now time.Time) {
	rc := s.opts.parkRelease
	if rc == nil || s.opts.parkRules == nil || s.passing() == nil {
		return
	}
	entries, err := rc.builds.Builds(ctx)
	if err != nil {
		s.opts.logger.Warn("scheduler: reading the build registry failed", "err", err)
		return
	}
	newest := map[[2]string]processor.BuildEntry{}
	for _, e := range entries {
		k := [2]string{e.Context, e.Processor}
		if cur, ok := newest[k]; !ok || e.StartedAt > cur.StartedAt {
			newest[k] = e
		}
	}
	keys := make([][2]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return compareKeys(a, b) })
	for _, k := range keys {
		if s.passing() == nil {
			return
		}
		if !s.leads(k[1]) {
			continue // another instance's, which holds the processor's first partition
		}
		if err := s.advance(ctx, rc, newest[k], now); err != nil && ctx.Err() == nil {
			s.opts.logger.Warn("scheduler: release step failed; trying again next pass", "context", k[0], "processor", k[1], "err", err)
		}
	}
}

func compareKeys(a, b [2]string) int {
	if a[0] != b[0] {
		if a[0] < b[0] {
			return -1
		}
		return 1
	}
	switch {
	case a[1] < b[1]:
		return -1
	case a[1] > b[1]:
		return 1
	}
	return 0
}

// advance moves the release of e's processor on by one step at most.
func (s *Scheduler) advance(ctx context.Context, rc *parkReleaseConfig, e processor.BuildEntry, now time.Time) error {
	rel, ok, err := rc.progress.Get(ctx, e.Context, e.Processor)
	if errors.Is(err, kvstore.ErrInvalid) {
		return s.halt(ctx, rc, ParkRelease{Context: e.Context, Processor: e.Processor, Build: e.Build, Progress: rollout.Progress{StartedAt: now.UnixMilli()}}, now,
			"the stored release does not validate, so it is not acted on ("+err.Error()+"); the parked records stay parked until the next build", nil)
	}
	if err != nil {
		return err
	}
	if bad := rc.policy.rollout().CanContinue(rel.Progress); bad != "" {
		return s.halt(ctx, rc, rel, now, bad+"; the release halted and the parked records stay parked", nil)
	}
	ms := now.UnixMilli()
	switch {
	case !ok:
		rel = ParkRelease{Context: e.Context, Processor: e.Processor, Build: e.Build, Progress: rollout.Progress{Phase: PhaseBaseline, StartedAt: ms, UpdatedAt: ms}}
		return rc.progress.put(ctx, rel)
	case rel.Build != e.Build && e.Build == rel.PreviousBuild && (rel.Phase == PhaseCanary || rel.Phase == PhaseSteps):
		return nil // an instance of the build being replaced, restarted during the release
	case rel.Build != e.Build && len(s.opts.parkRules.Set().Parks(e.Context, e.Processor, now)) == 0:
		// Nothing can be parked for this processor: note the build, quietly.
		rel = ParkRelease{Context: e.Context, Processor: e.Processor, Build: e.Build, PreviousBuild: rel.Build, Progress: rollout.Progress{Phase: PhaseDone, StartedAt: ms, UpdatedAt: ms}}
		return rc.progress.put(ctx, rel)
	case rel.Build != e.Build:
		if rel.Phase == PhaseCanary || rel.Phase == PhaseSteps {
			s.opts.logger.Info("scheduler: a newer build supersedes the release under way", "processor", e.Processor, "build", rel.Build.String(), "newer", e.Build.String())
		}
		rel = ParkRelease{Context: e.Context, Processor: e.Processor, Build: e.Build, PreviousBuild: rel.Build, Progress: rollout.Start(rc.policy.rollout(), now)}
		s.parkReleases.started.Add(1)
		s.opts.logger.Info("scheduler: new build registered; releasing its parked records, canary first", "context", e.Context, "processor", e.Processor, "build", e.Build.String(), "previous", rel.PreviousBuild.String())
		if err := rc.progress.put(ctx, rel); err != nil {
			return err
		}
	case !rel.Running():
		return nil
	}
	if len(rel.Batch) > 0 {
		return s.settle(ctx, rc, rel, now)
	}
	return s.launch(ctx, rc, rel, now)
}

// settle checks the batch under way and, once every record has an
// outcome, advances or halts the release.
func (s *Scheduler) settle(ctx context.Context, rc *parkReleaseConfig, rel ParkRelease, now time.Time) error {
	pending, ok, failed := settleBatch(rc.records, rel.Batch, now)
	if pending {
		return nil
	}
	var v rollout.Verdict
	rel.Progress, v = rel.Settled(rc.policy.rollout(), ok, failed, now)
	if v.Kind == rollout.Halt {
		return s.halt(ctx, rc, rel, now, fmt.Sprintf("the %s of build %s succeeded for %d of %d records (%.0f%%), below the threshold of %.0f%%; the release halted and the other parked records stay parked",
			v.What, rel.Build, len(ok), v.Released, 100*v.Ratio, 100*v.Threshold), failed)
	}
	s.parkReleases.steps.Add(1)
	return rc.progress.put(ctx, rel)
}

// halt stops rel for reason: it is stored halted (so it is never acted on
// again), logged, counted and handed to onHalt; the failed records of its
// last step are marked UNRECOVERABLE with the reason.
func (s *Scheduler) halt(ctx context.Context, rc *parkReleaseConfig, rel ParkRelease, now time.Time, reason string, failed []string) error {
	rel.Progress = rel.Halted(reason, now)
	if err := rc.progress.put(ctx, rel); err != nil {
		return err
	}
	s.parkReleases.halted.Add(1)
	s.opts.logger.Warn("scheduler: release halted", "context", rel.Context, "processor", rel.Processor, "build", rel.Build.String(), "reason", rel.Halt, "failed", failed)
	for _, id := range failed {
		meta := aggregate.Meta{Actor: Actor, Reason: "release halted: " + rel.Halt, CommandID: fmt.Sprintf("release-halt:%s:%s:%d", id, rel.Build, rel.StartedAt)}
		if _, err := s.exec.Execute(ctx, id, aggregate.MarkRecoverable{Recoverable: aggregate.Unrecoverable}, meta); err != nil && !errors.As(err, new(*aggregate.Error)) {
			s.opts.logger.Warn("scheduler: marking a failed release record failed", "record", id, "err", err)
		}
	}
	if rc.onHalt != nil {
		rc.onHalt(rel)
	}
	return nil
}

// launch prepares the next canary or step, or ends the release when no
// parked record is left.
func (s *Scheduler) launch(ctx context.Context, rc *parkReleaseConfig, rel ParkRelease, now time.Time) error {
	size, due := rel.Next(rc.policy.rollout(), now)
	if !due {
		return nil
	}
	if size == 0 {
		return s.done(ctx, rc, rel, now)
	}
	parked, err := s.parkedRecords(rc, rel, now, size)
	if err != nil {
		return err
	}
	if len(parked) == 0 {
		return s.done(ctx, rc, rel, now)
	}
	label := rel.Label()
	batch, err := s.prepareAll(ctx, parked, forcePrepare, func(it api.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("deploy release of build %s: %s", rel.Build, label),
			CommandID: fmt.Sprintf("release:%s:%s:%d", it.ID, rel.Build, rel.StartedAt)}
	})
	s.parkReleases.prepared.Add(uint64(len(batch)))
	if len(batch) == 0 {
		return err // every pick moved on (the next pass picks again), or the first could not be sent
	}
	rel.Progress = rel.Launched(batch, now)
	if perr := rc.progress.put(ctx, rel); perr != nil {
		return perr
	}
	return err // the records prepared are in the batch; the error is logged
}

func (s *Scheduler) done(ctx context.Context, rc *parkReleaseConfig, rel ParkRelease, now time.Time) error {
	rel.Progress = rel.Finished(now)
	s.parkReleases.done.Add(1)
	s.opts.logger.Info("scheduler: release done", "context", rel.Context, "processor", rel.Processor, "build", rel.Build.String(),
		"released", rel.Released, "succeeded", rel.Succeeded, "failed", rel.Failed)
	return rc.progress.put(ctx, rel)
}

// parkedRecords lists up to n records of rel's processor parked until a
// deploy whose last failure is older than the release: FAILED, retried
// automatically, and parked by the current rules. Oldest failure first.
func (s *Scheduler) parkedRecords(rc *parkReleaseConfig, rel ParkRelease, now time.Time, n int) ([]api.Item, error) {
	set := s.opts.parkRules.Set()
	q := api.Query{
		Filter: api.Filter{FunctionContext: rel.Context, Processor: rel.Processor, Status: aggregate.StatusFailed,
			ExecuteAtTo: time.UnixMilli(rel.StartedAt)},
		Sort:  api.Sort{Field: api.SortExecuteAt},
		Limit: api.MaxLimit,
	}
	var out []api.Item
	for len(out) < n {
		page, err := rc.records.List(q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			x := rules.Failure{Function: it.Function, ErrorCode: it.ErrorCode, Fingerprint: it.Fingerprint}
			if len(out) < n && it.Recoverable.AutoRetried() && set.Parked(x, now) {
				out = append(out, it)
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return out, nil
}
