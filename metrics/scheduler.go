package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index"
	"github.com/amends-dev/amends/scheduler"
)

// DueIndex is what Scheduler reads for the backlog. *projection.Index
// satisfies it.
type DueIndex interface {
	Due(now time.Time, limit int) []index.Due
	Count(f api.Filter) (int, error)
}

// Scheduler reports the scheduler's counters (amends_scheduler_*) and the
// backlog: how many records are due now and how long the oldest has waited.
func Scheduler(s *scheduler.Scheduler, due DueIndex) prometheus.Collector {
	return schedulerCollector(s.Stats, due, time.Now)
}

func schedulerCollector(stats func() scheduler.Stats, due DueIndex, now func() time.Time) prometheus.Collector {
	prepares := desc("scheduler_prepares_total", "Prepares the scheduler sent, by result (prepared, rejected because the record moved on, duplicate, failed, missing: the record of a due view does not exist).", "result")
	passes := desc("scheduler_passes_total", "Scheduler passes run as the lease holder.")
	active := desc("scheduler_active", "1 if this instance holds the scheduler lease.")
	leases := desc("scheduler_lease_changes_total", "Lease acquisitions and losses of this instance.", "change")
	backlog := desc("scheduler_backlog", "Records due now (the next-retry view).")
	oldest := desc("scheduler_oldest_due_age_seconds", "How long the oldest due record has been due; 0 if none is.")
	skipped := desc("scheduler_skipped_total", "Due records passes left out because a prepare of theirs failed and they are backing off.")
	backingOff := desc("scheduler_backing_off", "Records backing off after a failed prepare, to be tried again later.")
	held := desc("scheduler_held", "Due records the last pass left alone because a park-until-deploy rule parks them or their circuit's drain holds them.")
	releases := desc("scheduler_releases_total", "Park releases of the records parked until a deploy, by event (started, step, prepared, halted, done); halted means a canary or step failed.", "event")
	drains := desc("scheduler_drains_total", "Recovery drains after an outage, by event (started, step, prepared, probe, halved, canary_failed, done); canary_failed means the records of a canary the circuit had refused failed, and the drain waits a cool-down before the next.", "event")
	return &collector{descs: []*prometheus.Desc{prepares, passes, active, leases, backlog, oldest, skipped, backingOff, held, releases, drains}, read: func() []sample {
		s := stats()
		d := s.Drains
		out := []sample{
			counter(drains, d.Started, "started"), counter(drains, d.Steps, "step"), counter(drains, d.Prepared, "prepared"), counter(drains, d.Probes, "probe"),
			counter(drains, d.Halved, "halved"), counter(drains, d.CanaryFailed, "canary_failed"), counter(drains, d.Done, "done"),
			gauge(held, float64(s.Held)), counter(releases, s.ParkReleases.Started, "started"), counter(releases, s.ParkReleases.Steps, "step"),
			counter(releases, s.ParkReleases.Prepared, "prepared"), counter(releases, s.ParkReleases.Halted, "halted"), counter(releases, s.ParkReleases.Done, "done"),
			counter(prepares, s.Prepared, "prepared"), counter(prepares, s.Rejected, "rejected"),
			counter(prepares, s.Duplicates, "duplicate"), counter(prepares, s.Failed, "failed"), counter(prepares, s.Missing, "missing"),
			counter(passes, s.Passes), counter(leases, s.Acquired, "acquired"), counter(leases, s.Lost, "lost"),
			counter(skipped, s.Skipped), gauge(backingOff, float64(s.BackingOff)),
		}
		a := 0.0
		if s.Active {
			a = 1
		}
		out = append(out, gauge(active, a))
		t := now()
		if n, err := due.Count(api.Filter{View: aggregate.ViewNextRetry, Now: t}); err == nil {
			out = append(out, gauge(backlog, float64(n)))
		}
		age := 0.0
		if d := due.Due(t, 1); len(d) == 1 {
			age = t.Sub(time.UnixMilli(d[0].NextRetryAt)).Seconds()
		}
		return append(out, gauge(oldest, age))
	}}
}
