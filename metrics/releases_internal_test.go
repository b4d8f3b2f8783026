package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/scheduler"
)

func TestSchedulerCollectorReleases(t *testing.T) {
	c := schedulerCollector(func() scheduler.Stats {
		return scheduler.Stats{Held: 5, ParkReleases: scheduler.ParkReleaseStats{Started: 2, Steps: 3, Prepared: 9, Halted: 1, Done: 1}}
	}, fakeIndex{}, time.Now)
	want := `
# HELP amends_scheduler_held Due records the last pass left alone because a park-until-deploy rule parks them or their circuit's drain holds them.
# TYPE amends_scheduler_held gauge
amends_scheduler_held 5
# HELP amends_scheduler_releases_total Park releases of the records parked until a deploy, by event (started, step, prepared, halted, done); halted means a canary or step failed.
# TYPE amends_scheduler_releases_total counter
amends_scheduler_releases_total{event="done"} 1
amends_scheduler_releases_total{event="halted"} 1
amends_scheduler_releases_total{event="prepared"} 9
amends_scheduler_releases_total{event="started"} 2
amends_scheduler_releases_total{event="step"} 3
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), "amends_scheduler_held", "amends_scheduler_releases_total"))
}
