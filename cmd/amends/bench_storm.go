package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/cmd/amends/internal/bench"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/scheduler"
)

const stormLong = `Storm plays the bad day: events appended at a steady rate to one service
with three functions, Mailer.send and Mailer.audit (one processor) and
Ledger.post (another). After a healthy lead-in (--before), every call of
Mailer.send fails for --outage, with an error marked recoverable, so it is
retried in process and then recorded. Its circuit opens and its events
are recorded at once (errorCode CircuitOpen) without a call; after its
cool-down a live event (or, with none, a replay the scheduler prepares)
probes it. Once it closes, the control plane (projector, index, scheduler)
drains its records, a canary then doubling steps, and the service replays
them. --flap 5s makes the dependency flap during --outage instead: down
5 s, up 5 s (--flap-up), and so on.

The settings are those of amends serve unless a flag changes them: the
scheduler's period (1m) and batch (100), the records' min backoff (180 s),
the processor's immediate retries (3 after 2/4/8 s), the default circuit
and the drain's default rate.

It prints the healthy sibling's (Mailer.audit) and the other processor's
(Ledger.post) latency from append to first call, before, during and after
the outage; the calls of each function, those made during the outage and
the re-runs of a function on an event it had already succeeded on; the
calls refused by the circuits and their probes; Mailer.send's circuit
transitions and recovery drain; the records created and their status at
the end; the largest backlog (pending + ack pending) of each processor's
consumer; and the time from the outage's end until every event had a
successful call of every function (-1: not within --drain).

The embedded NATS server is started on a temporary directory as for bench;
--nats-url plays it on an existing server. --quick plays a short storm
with short immediate retries (a smoke test for CI).

` + envHelp

type stormFlags struct {
	bench           benchFlags
	rate            int
	events          int
	before          time.Duration
	outage          time.Duration
	retries         int
	retryWait       time.Duration
	schedulerPeriod time.Duration
	schedulerBatch  int
	minBackoff      time.Duration
	drain           time.Duration
	flapDown        time.Duration
	flapUp          time.Duration
	drainRate       float64
	coolDown        time.Duration
	noCircuit       bool
	badEvents       int
	dashboard       string
}

func newBenchStormCmd(a *app) *cobra.Command {
	var f stormFlags
	cmd := &cobra.Command{
		Use:   "storm",
		Short: "Play an outage of one function and measure its siblings, the calls and the recovery",
		Long:  stormLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStorm(cmd.Context(), a, &f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.IntVar(&f.rate, "rate", 100, "events appended per second (1 to 10000)")
	fs.IntVar(&f.events, "events", 0, "events appended in all (default rate × (before + outage))")
	fs.DurationVar(&f.before, "before", 10*time.Second, "healthy time before the outage, for the baseline latency")
	fs.DurationVar(&f.outage, "outage", 60*time.Second, "how long every call of Mailer.send fails")
	fs.IntVar(&f.retries, "immediate-retries", -1, "immediate retries per failure, 0 to 10 (default -1: the processor's default, 3 after 2/4/8 s)")
	fs.DurationVar(&f.retryWait, "retry-wait", 0, "wait before the first immediate retry, doubling after (default the processor's 2s)")
	fs.DurationVar(&f.flapDown, "flap", 0, "flap during --outage: down for this long, then up (--flap-up), and so on (default: down throughout)")
	fs.DurationVar(&f.flapUp, "flap-up", 0, "with --flap, how long the dependency is up between downs (default --flap)")
	fs.DurationVar(&f.schedulerPeriod, "scheduler-period", scheduler.DefaultPeriod, "the scheduler's pass period")
	fs.IntVar(&f.schedulerBatch, "scheduler-batch", scheduler.DefaultBatch, "records the scheduler prepares per pass")
	fs.DurationVar(&f.minBackoff, "min-backoff", time.Duration(aggregate.DefaultRetrySpec.MinBackoff)*time.Second, "the records' retry spec min backoff (whole seconds)")
	fs.Float64Var(&f.drainRate, "drain-rate", scheduler.DefaultDrainRate, "the recovery drain's most records per second, 1 to 100000")
	fs.DurationVar(&f.coolDown, "cool-down", circuit.DefaultCoolDown, "the circuits' first cool-down, 100ms to 1h (doubling after each failed probe, at most "+circuit.DefaultMaxCoolDown.String()+")")
	fs.BoolVar(&f.noCircuit, "no-circuit", false, "turn the circuits off (the storm of the isolation issue)")
	fs.IntVar(&f.badEvents, "bad-events", 0, "percentage (0 to 99) of events Mailer.send always fails on for their own reason, by a hash of the event id; --outage 0 plays bad events alone")
	fs.DurationVar(&f.drain, "drain", 10*time.Minute, "how long to wait after the outage for every event to succeed")
	fs.StringVar(&f.dashboard, "dashboard", "", "serve the storm's API and dashboard on this loopback address (e.g. 127.0.0.1:8088) while it runs, without tokens")
	fs.StringVar(&f.bench.natsURL, "nats-url", "", "play it on this NATS server or cluster instead of an embedded one")
	fs.StringVar(&f.bench.creds, "nats-creds", "", "NATS credentials file for --nats-url")
	fs.StringVar(&f.bench.storage, "storage", "file", "storage of the storm's streams: file or memory")
	fs.StringVarP(&f.bench.output, "output", "o", "table", "output format: table or json")
	fs.BoolVar(&f.bench.quick, "quick", false, "a short storm with short immediate retries (a smoke test for CI)")
	annotateEnv(fs)
	return outputs(outputDocument, cmd)
}

func runStorm(ctx context.Context, a *app, f *stormFlags, changed func(string) bool) error {
	if err := checkOutput(f.bench.output); err != nil {
		return err
	}
	c := stormConfig(a, f, changed)
	if err := checkStormConfig(c); err != nil {
		return err
	}
	if f.dashboard != "" {
		l, err := listenLoopback("--dashboard", f.dashboard)
		if err != nil {
			return err
		}
		defer l.Close()
		c.Dashboard = l
		a.logger.Info("bench storm: the dashboard of the storm's control plane", "url", "http://"+l.Addr().String()+"/")
	}
	env := &bench.Env{Prefix: strings.ReplaceAll(uuid.NewString()[:8], "-", ""), Quick: f.bench.quick, Concurrency: 1, Replicas: 1}
	var err error
	if env.Storage, err = benchStorage(f.bench.storage); err != nil {
		return err
	}
	nc, closeNATS, err := benchConnect(ctx, &f.bench)
	if err != nil {
		return err
	}
	defer closeNATS()
	if env.JS, err = jetstream.New(nc); err != nil {
		return err
	}
	a.logger.Info("bench storm", "rate", c.Rate, "before", c.Before, "outage", c.Outage, "immediateRetries", c.ImmediateRetries)
	res, err := bench.RunStorm(ctx, env, c)
	if err != nil {
		return err
	}
	return printMeasured(a.stdout, f.bench.output, res, func(w io.Writer) error { return printStorm(w, res) }, nil)
}

// stormConfig is the storm the flags ask for; with --quick, the flags the
// command line did not set take the quick storm's values.
func stormConfig(a *app, f *stormFlags, changed func(string) bool) bench.StormConfig {
	c := bench.StormConfig{Rate: f.rate, Events: f.events, Before: f.before, Outage: f.outage, ImmediateRetries: f.retries,
		RetryWait: f.retryWait, SchedulerPeriod: f.schedulerPeriod, SchedulerBatch: f.schedulerBatch, MinBackoff: f.minBackoff,
		Drain: f.drain, FlapDown: f.flapDown, FlapUp: f.flapUp, DrainRate: f.drainRate, Circuit: circuit.Policy{Off: f.noCircuit, CoolDown: f.coolDown},
		BadEvents: f.badEvents,
		Logger:    quiet(a.logger)}
	if f.bench.quick {
		// Each flag the command line set keeps its value.
		quick := map[string]func(){
			"rate": func() { c.Rate = 50 }, "before": func() { c.Before = time.Second }, "outage": func() { c.Outage = 2 * time.Second },
			"retry-wait": func() { c.RetryWait = 50 * time.Millisecond }, "scheduler-period": func() { c.SchedulerPeriod = 100 * time.Millisecond },
			"min-backoff": func() { c.MinBackoff = 0 }, "drain": func() { c.Drain = time.Minute },
			"cool-down": func() { c.Circuit.CoolDown = 500 * time.Millisecond },
		}
		for name, set := range quick {
			if !changed(name) {
				set()
			}
		}
	}
	return c
}

// checkStormConfig refuses a storm outside the flags' bounds, naming the
// flag.
func checkStormConfig(c bench.StormConfig) error {
	switch {
	case !bounds.Within(c.Rate, 1, 10000):
		return usageErrorf("--rate must be between 1 and 10000, got %d", c.Rate)
	case !bounds.Within(c.Events, 0, 1_000_000):
		return usageErrorf("--events must be between 0 (rate × duration) and 1000000, got %d", c.Events)
	case !bounds.Within(c.Before, 0, time.Hour):
		return usageErrorf("--before must be between 0s and 1h, got %s", c.Before)
	case !bounds.Within(c.Outage, 0, time.Hour):
		return usageErrorf("--outage must be between 0s and 1h, got %s", c.Outage)
	case !bounds.Within(c.ImmediateRetries, -1, 10):
		return usageErrorf("--immediate-retries must be between -1 (the default) and 10, got %d", c.ImmediateRetries)
	case !bounds.Within(c.BadEvents, 0, 99):
		return usageErrorf("--bad-events must be a percentage from 0 to 99, got %d", c.BadEvents)
	}
	return checkStormTimes(c)
}

// checkStormTimes is the second half of checkStormConfig: the scheduler's,
// the drain's and the circuit's flags.
func checkStormTimes(c bench.StormConfig) error {
	switch {
	case !bounds.Within(c.RetryWait, 0, time.Minute):
		return usageErrorf("--retry-wait must be between 0s and 1m, got %s", c.RetryWait)
	case !bounds.Within(c.SchedulerPeriod, 10*time.Millisecond, time.Hour):
		return usageErrorf("--scheduler-period must be between 10ms and 1h, got %s", c.SchedulerPeriod)
	case !bounds.Within(c.SchedulerBatch, 1, 10000):
		return usageErrorf("--scheduler-batch must be between 1 and 10000, got %d", c.SchedulerBatch)
	case !bounds.Within(c.MinBackoff, 0, time.Hour) || c.MinBackoff%time.Second != 0:
		return usageErrorf("--min-backoff must be whole seconds between 0s and 1h, got %s", c.MinBackoff)
	case !bounds.Within(c.Drain, time.Second, 24*time.Hour):
		return usageErrorf("--drain must be between 1s and 24h, got %s", c.Drain)
	case !bounds.Within(c.FlapDown, 0, time.Hour):
		return usageErrorf("--flap must be between 0s (no flapping) and 1h, got %s", c.FlapDown)
	case !bounds.Within(c.FlapUp, 0, time.Hour) || (c.FlapUp > 0 && c.FlapDown == 0):
		return usageErrorf("--flap-up must be between 0s and 1h, and needs --flap, got %s", c.FlapUp)
	case !bounds.Within(c.Circuit.CoolDown, 100*time.Millisecond, time.Hour):
		return usageErrorf("--cool-down must be between 100ms and 1h, got %s", c.Circuit.CoolDown)
	case !(c.DrainRate >= 1 && c.DrainRate <= circuit.MaxDrainRate):
		return usageErrorf("--drain-rate must be between 1 and %d records/s, got %v", circuit.MaxDrainRate, c.DrainRate)
	}
	return nil
}

func printStorm(w io.Writer, r bench.StormResult) error {
	c := r.Config
	retries := "default (3 after 2/4/8 s)"
	if c.ImmediateRetries >= 0 {
		retries = fmt.Sprint(c.ImmediateRetries)
	}
	down := "down for " + c.Outage.String()
	if c.Outage == 0 {
		down = "never down"
	}
	if c.FlapDown > 0 {
		down = fmt.Sprintf("flapping for %s (down %s, up %s)", c.Outage, c.FlapDown, c.FlapUp)
	}
	circ := "default circuit"
	if c.Circuit.Off {
		circ = "no circuit"
	}
	fmt.Fprintf(w, "storm: %d events at %d/s, Mailer.send %s after %s, immediate retries %s, scheduler every %s × %d, min backoff %s, %s\n\n",
		r.Events, c.Rate, down, c.Before, retries, c.SchedulerPeriod, c.SchedulerBatch, c.MinBackoff, circ)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LATENCY APPEND → FIRST CALL\tPHASE\tN\tP50\tP99\tMAX")
	for _, fn := range []struct {
		name string
		p    bench.StormPhases
	}{{"Mailer.audit (sibling)", r.Sibling}, {"Ledger.post (other processor)", r.Other}} {
		for _, ph := range []struct {
			name string
			l    bench.Latency
		}{{"before", fn.p.Before}, {"during", fn.p.During}, {"after", fn.p.After}} {
			if ph.l.N == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", fn.name, ph.name, ph.l.N, ms(ph.l.P50), ms(ph.l.P99), ms(ph.l.Max))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FUNCTION\tCALLS\tREPLAYS\tDURING OUTAGE\tREPLAYS DURING\tREFUSED\tPROBES\tRE-RUNS AFTER SUCCESS\tEVENTS SUCCEEDED\t")
	for _, name := range bench.StormFunctions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, r.Calls[name], r.ReplayCalls[name], r.CallsDuringOutage[name],
			r.ReplayCallsDuringOutage[name], r.Refused[name], r.Probes[name], r.Reruns[name], r.Succeeded[name])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Transitions) > 0 {
		fmt.Fprintln(w, "\nMailer.send's circuit (seconds from the outage's start):")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AT\tFROM\tTO\tCAUSE\tFAILURES\tCALLS\tCOOL-DOWN")
		for _, t := range r.Transitions {
			fmt.Fprintf(tw, "%.1f\t%s\t%s\t%s\t%d\t%d\t%.1fs\n", t.At, t.From, t.To, t.Cause, t.Failures, t.Calls, t.CoolDown)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "final circuit %s", r.FinalCircuit)
	if d := r.Drain; d != nil {
		fmt.Fprintf(w, "; drain %s: %d released in %d steps, %d succeeded, %d failed; %d probe replays", d.Phase, d.Released, d.Judged, d.Succeeded, d.Failed, r.DrainProbes)
	}
	fmt.Fprintln(w)
	recovery := "not within --drain"
	if r.RecoverySeconds >= 0 {
		recovery = fmt.Sprintf("%.1f s", r.RecoverySeconds)
	}
	fmt.Fprintf(w, "\nrecords created %d (already recorded %d), at the end %v, %d not SUCCEEDED; backlog peak Mailer %d, Ledger %d\n", r.RecordsCreated, r.AlreadyRecorded,
		r.RecordsByStatus, r.RecordsOpen, r.BacklogPeak["Mailer"], r.BacklogPeak["Ledger"])
	fmt.Fprintf(w, "outage end → every event succeeded on every function: %s (storm took %.1f s)\n", recovery, r.Seconds)
	if c.BadEvents > 0 {
		fmt.Fprintf(w, "bad events %d (%d%%), each failing Mailer.send for its own reason; false trips while the dependency was up: %d openings, %d healthy events refused, %d healthy events recorded\n",
			r.BadEvents, c.BadEvents, r.FalseOpens, r.HealthyRefused, r.HealthyRecorded)
	}
	fmt.Fprintf(w, "the oldest due record waited at most %.1f s for the scheduler (period %s) while the circuit was closed and no drain held its records\n",
		r.DueLateSeconds, c.SchedulerPeriod)
	return nil
}

func ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

// listenLoopback listens on addr, which must be a loopback address: what
// it serves has no tokens. flag names the flag in errors.
func listenLoopback(flag, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageErrorf("%s %s: want HOST:PORT, e.g. 127.0.0.1:8088", flag, quoteShort(addr))
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usageErrorf("%s %s: serve it on a loopback address (127.0.0.1, ::1 or localhost): it has no tokens", flag, quoteShort(addr))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return l, nil
}
