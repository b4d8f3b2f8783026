package circuit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
)

var (
	mailer = circuit.Function{Context: "shop", Processor: "Mailer", Name: "send"}
	t0     = time.UnixMilli(1_700_000_000_000)
	// policy re-opens after one failed probe; patient, the default five.
	policy  = mustPolicy(circuit.Policy{CoolDown: 10 * time.Second, MaxCoolDown: 40 * time.Second, Successes: 2, ProbeFailures: 1, ProbeTimeout: 5 * time.Second})
	patient = mustPolicy(circuit.Policy{CoolDown: 10 * time.Second, MaxCoolDown: 40 * time.Second, Successes: 2, ProbeTimeout: 5 * time.Second})
	smtp    = circuit.Failure{Code: "Unclassified", Message: "smtp 451: mail service unavailable", Fingerprint: "fp1-0123456789abcdef", Recoverable: aggregate.Recoverable}
)

func mustPolicy(p circuit.Policy) circuit.Policy {
	p, err := p.Resolve()
	if err != nil {
		panic(err)
	}
	return p
}

func at(d time.Duration) time.Time { return t0.Add(d) }

// open is a circuit tripped at t0 by 20 failures in a row that began 1 s
// before.
func open() circuit.State {
	s, _ := circuit.Evolve(circuit.New(mailer), t0, policy, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 20, Last: smtp,
		FirstFailureAt: at(-time.Second).UnixMilli(), Instance: "i1"})
	return s
}

func halfOpen() circuit.State {
	s, _ := circuit.Evolve(open(), at(10*time.Second), policy, circuit.Claim{Instance: "i1", ID: "p1"})
	return s
}

// Every transition, given a state, when something happens at a time, then
// the state that results (or that nothing changed).
func TestTransitions(t *testing.T) {
	type then struct {
		changed   bool
		phase     circuit.Phase
		until     time.Duration // from t0; 0: no probe time
		coolDown  time.Duration
		forced    bool
		probe     string
		successes int
		// probeFailures counts the failed probes of the half-open.
		probeFailures int
		incident      [2]time.Duration // from t0; -1: unset
		transition    *circuit.Transition
	}
	noIncident := [2]time.Duration{-1, -1}
	cases := []struct {
		name  string
		given circuit.State
		when  func(circuit.State) (circuit.State, bool)
		then  then
	}{
		{"closed trips on consecutive failures", circuit.New(mailer),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, t0, policy, circuit.Trip{Cause: circuit.CauseConsecutive, Failures: 20, Calls: 25, Last: smtp, FirstFailureAt: at(-time.Second).UnixMilli(), Instance: "i1"})
			},
			then{changed: true, phase: circuit.Open, until: 10 * time.Second, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 1, From: circuit.Closed, To: circuit.Open, Cause: circuit.CauseConsecutive, Failures: 20, Calls: 25, CoolDownMs: 10000, Instance: "i1"}}},
		{"an open circuit does not trip again", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Second), policy, circuit.Trip{Cause: circuit.CauseRatio})
			},
			then{phase: circuit.Open, until: 10 * time.Second, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1}}},
		{"no probe before the cool-down", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(10*time.Second-time.Millisecond), policy, circuit.Claim{Instance: "i2", ID: "p"})
			},
			then{phase: circuit.Open, until: 10 * time.Second, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1}}},
		{"after the cool-down a claim half-opens it", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(10*time.Second), policy, circuit.Claim{Instance: "i2", ID: "p"})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, probe: "p", incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 2, From: circuit.Open, To: circuit.HalfOpen, Cause: circuit.CauseCoolDown, CoolDownMs: 10000, Instance: "i2"}}},
		{"half-open: a second claim while the probe runs is refused", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), policy, circuit.Claim{Instance: "i2", ID: "p2"})
			},
			then{phase: circuit.HalfOpen, coolDown: 10 * time.Second, probe: "p1", incident: [2]time.Duration{-time.Second, -1}}},
		{"half-open: a probe past its timeout is taken over", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(15*time.Second), policy, circuit.Claim{Instance: "i2", ID: "p2"})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, probe: "p2", incident: [2]time.Duration{-time.Second, -1}}},
		{"a probe's success counts; the circuit stays half-open below the successes", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeSuccess{ID: "p1"})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, successes: 1, incident: [2]time.Duration{-time.Second, -1}}},
		{"the last success closes it and ends the incident",
			func() circuit.State {
				s, _ := circuit.Evolve(halfOpen(), at(11*time.Second), policy, circuit.ProbeSuccess{ID: "p1"})
				s, _ = circuit.Evolve(s, at(11*time.Second), policy, circuit.Claim{Instance: "i1", ID: "p3"})
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(12*time.Second), policy, circuit.ProbeSuccess{ID: "p3"})
			},
			then{changed: true, phase: circuit.Closed, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, 12 * time.Second},
				transition: &circuit.Transition{Seq: 3, From: circuit.HalfOpen, To: circuit.Closed, Cause: circuit.CauseProbesSucceeded, Calls: 2, Instance: "i1"}}},
		{"a stale probe's success changes nothing", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeSuccess{ID: "other"})
			},
			then{phase: circuit.HalfOpen, coolDown: 10 * time.Second, probe: "p1", incident: [2]time.Duration{-time.Second, -1}}},
		{"a failed probe re-opens it with twice the cool-down", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeFailure{ID: "p1", Last: smtp, Jitter: 0})
			},
			then{changed: true, phase: circuit.Open, until: 31 * time.Second, coolDown: 20 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 3, From: circuit.HalfOpen, To: circuit.Open, Cause: circuit.CauseProbeFailed, Failures: 1, Calls: 1, CoolDownMs: 20000, Instance: "i1"}}},
		{"the cool-down is capped",
			func() circuit.State {
				s := halfOpen()
				s.CoolDownMs = 30000
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeFailure{ID: "p1", Last: smtp, Jitter: 0})
			},
			then{changed: true, phase: circuit.Open, until: 51 * time.Second, coolDown: 40 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 3, From: circuit.HalfOpen, To: circuit.Open, Cause: circuit.CauseProbeFailed, Failures: 1, Calls: 1, CoolDownMs: 40000, Instance: "i1"}}},
		{"the cool-down is cut by the jitter", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeFailure{ID: "p1", Last: smtp, Jitter: 0.5})
			},
			then{changed: true, phase: circuit.Open, until: 29 * time.Second, coolDown: 20 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 3, From: circuit.HalfOpen, To: circuit.Open, Cause: circuit.CauseProbeFailed, Failures: 1, Calls: 1, CoolDownMs: 18000, Instance: "i1"}}},
		{"a trip's cool-down too", circuit.New(mailer),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, t0, policy, circuit.Trip{Cause: circuit.CauseRatio, Failures: 10, Calls: 20, Last: smtp, Instance: "i1", Jitter: 0.99})
			},
			then{changed: true, phase: circuit.Open, until: 8020 * time.Millisecond, coolDown: 10 * time.Second, incident: [2]time.Duration{0, -1},
				transition: &circuit.Transition{Seq: 1, From: circuit.Closed, To: circuit.Open, Cause: circuit.CauseRatio, Failures: 10, Calls: 20, CoolDownMs: 8020, Instance: "i1"}}},
		{"an operator opens a closed circuit: forced, no probe time", circuit.New(mailer),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "maintenance"})
			},
			then{changed: true, phase: circuit.Open, forced: true, incident: [2]time.Duration{0, -1},
				transition: &circuit.Transition{Seq: 1, From: circuit.Closed, To: circuit.Open, Cause: circuit.CauseOperator, Actor: "ops", Reason: "maintenance"}}},
		{"a forced circuit is never probed",
			func() circuit.State {
				s, _ := circuit.Evolve(circuit.New(mailer), t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "m"})
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Hour), policy, circuit.Claim{Instance: "i1", ID: "p"})
			},
			then{phase: circuit.Open, forced: true, incident: [2]time.Duration{0, -1}}},
		{"an operator forces an open circuit: it keeps its incident", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Second), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "m"})
			},
			then{changed: true, phase: circuit.Open, forced: true, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 2, From: circuit.Open, To: circuit.Open, Cause: circuit.CauseOperator, Actor: "ops", Reason: "m"}}},
		{"opening a forced circuit again changes nothing",
			func() circuit.State {
				s, _ := circuit.Evolve(circuit.New(mailer), t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "m"})
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Second), circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "again"})
			},
			then{phase: circuit.Open, forced: true, incident: [2]time.Duration{0, -1}}},
		{"an operator closes a half-open circuit: the incident ends", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(20*time.Second), circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "fixed"})
			},
			then{changed: true, phase: circuit.Closed, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, 20 * time.Second},
				transition: &circuit.Transition{Seq: 3, From: circuit.HalfOpen, To: circuit.Closed, Cause: circuit.CauseOperator, Actor: "ops", Reason: "fixed"}}},
		{"closing a closed circuit changes nothing", circuit.New(mailer),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "x"})
			},
			then{phase: circuit.Closed, incident: noIncident}},
		{"a probe of an event that already succeeded as one is not claimed",
			func() circuit.State {
				s, _ := circuit.Evolve(open(), at(10*time.Second), policy, circuit.Claim{Instance: "i1", ID: "p1", Event: "e1"})
				s, _ = circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeSuccess{ID: "p1"})
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(12*time.Second), policy, circuit.Claim{Instance: "i2", ID: "p2", Event: "e1"})
			},
			then{phase: circuit.HalfOpen, coolDown: 10 * time.Second, successes: 1, incident: [2]time.Duration{-time.Second, -1}}},
		{"a second success of one event does not count",
			func() circuit.State {
				s, _ := circuit.Evolve(open(), at(10*time.Second), policy, circuit.Claim{Instance: "i1", ID: "p1", Event: "e1"})
				s, _ = circuit.Evolve(s, at(11*time.Second), policy, circuit.ProbeSuccess{ID: "p1"})
				s.Probe = &circuit.Probe{Instance: "i2", ID: "p2", Event: "e1", At: at(11 * time.Second).UnixMilli(), Until: at(16 * time.Second).UnixMilli()}
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(12*time.Second), policy, circuit.ProbeSuccess{ID: "p2"})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, successes: 1, incident: [2]time.Duration{-time.Second, -1}}},
		{"patient: one failed probe frees the probe and keeps it half-open", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), patient, circuit.ProbeFailure{ID: "p1", Last: smtp, Jitter: 0})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, probeFailures: 1, incident: [2]time.Duration{-time.Second, -1}}},
		{"patient: the fifth failed probe without a success re-opens it",
			func() circuit.State { s := halfOpen(); s.ProbeFailures = 4; return s }(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), patient, circuit.ProbeFailure{ID: "p1", Last: smtp, Jitter: 0})
			},
			then{changed: true, phase: circuit.Open, until: 31 * time.Second, coolDown: 20 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 3, From: circuit.HalfOpen, To: circuit.Open, Cause: circuit.CauseProbeFailed, Failures: 5, Calls: 5, CoolDownMs: 20000, Instance: "i1"}}},
		{"patient: after a success it takes ten failed probes",
			func() circuit.State {
				s := halfOpen()
				s.Successes, s.Probed, s.ProbeFailures = 1, []string{"e0"}, 8
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), patient, circuit.ProbeFailure{ID: "p1", Last: smtp, Jitter: 0})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, successes: 1, probeFailures: 9, incident: [2]time.Duration{-time.Second, -1}}},
		{"a failure that says nothing of the dependency frees the probe", halfOpen(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(11*time.Second), circuit.Policy{}, circuit.ProbeSilence{ID: "p1"})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1}}},
		{"an operator's early claim needs no cool-down", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Second), policy, circuit.Claim{Instance: "operator", ID: "op", Record: "r1", Early: true})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, probe: "op", incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 2, From: circuit.Open, To: circuit.HalfOpen, Cause: circuit.CauseCoolDown, CoolDownMs: 10000, Instance: "operator"}}},
		{"an early claim never probes a forced circuit",
			func() circuit.State {
				s, _ := circuit.Evolve(circuit.New(mailer), t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "m"})
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Second), policy, circuit.Claim{Instance: "operator", ID: "op", Early: true})
			},
			then{phase: circuit.Open, forced: true, incident: [2]time.Duration{0, -1}}},
		{"idle: past its cool-down an open circuit half-opens with no probe", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(10*time.Second), circuit.Policy{}, circuit.IdleTick{Instance: "scheduler"})
			},
			then{changed: true, phase: circuit.HalfOpen, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1},
				transition: &circuit.Transition{Seq: 2, From: circuit.Open, To: circuit.HalfOpen, Cause: circuit.CauseCoolDown, CoolDownMs: 10000, Instance: "scheduler"}}},
		{"idle: not before the cool-down", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(9*time.Second), circuit.Policy{}, circuit.IdleTick{Instance: "scheduler"})
			},
			then{phase: circuit.Open, until: 10 * time.Second, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1}}},
		{"idle: never a forced circuit",
			func() circuit.State {
				s, _ := circuit.Evolve(circuit.New(mailer), t0, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "m"})
				return s
			}(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Hour), circuit.Policy{}, circuit.IdleTick{Instance: "scheduler"})
			},
			then{phase: circuit.Open, forced: true, incident: [2]time.Duration{0, -1}}},
		{"a replay succeeding after failures reports an incident", circuit.New(mailer),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Minute), circuit.Policy{}, circuit.Recovery{From: t0.UnixMilli()})
			},
			then{changed: true, phase: circuit.Closed, incident: [2]time.Duration{0, time.Minute}}},
		{"recovery is not reported while the circuit is open", open(),
			func(s circuit.State) (circuit.State, bool) {
				return circuit.Evolve(s, at(time.Minute), circuit.Policy{}, circuit.Recovery{From: t0.UnixMilli()})
			},
			then{phase: circuit.Open, until: 10 * time.Second, coolDown: 10 * time.Second, incident: [2]time.Duration{-time.Second, -1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(c.given.Transitions)
			got, changed := c.when(c.given)
			w := c.then
			assert.Equal(t, w.changed, changed, "changed")
			assert.Equal(t, w.phase, got.Phase, "phase")
			wantUntil := int64(0)
			if w.until != 0 {
				wantUntil = at(w.until).UnixMilli()
			}
			assert.Equal(t, wantUntil, got.Until, "until")
			assert.Equal(t, w.coolDown.Milliseconds(), got.CoolDownMs, "cool-down")
			assert.Equal(t, w.forced, got.Forced, "forced")
			if w.probe == "" {
				assert.Nil(t, got.Probe, "no probe")
			} else if assert.NotNil(t, got.Probe, "a probe") {
				assert.Equal(t, w.probe, got.Probe.ID, "probe")
			}
			assert.Equal(t, w.successes, got.Successes, "successes")
			assert.Equal(t, w.probeFailures, got.ProbeFailures, "probe failures")
			inc := func(d time.Duration) int64 {
				if d == -1 {
					return 0
				}
				return at(d).UnixMilli()
			}
			assert.Equal(t, [2]int64{inc(w.incident[0]), inc(w.incident[1])}, [2]int64{got.Incident.From, got.Incident.To}, "incident (its opens: TestAnIncidentCountsItsReopens)")
			if w.transition == nil {
				assert.Len(t, got.Transitions, before, "no transition")
				return
			}
			require.Len(t, got.Transitions, before+1, "one transition")
			tr := got.Transitions[len(got.Transitions)-1]
			want := *w.transition
			want.At = tr.At
			assert.Equal(t, want, tr)
			assert.Equal(t, tr.Seq, got.Counts.Total(), "transitions are counted")
			assert.Len(t, c.given.Transitions, before, "the given state is unchanged")
		})
	}
}

func TestTransitionsKeepTheLast(t *testing.T) {
	s := circuit.New(mailer)
	now := t0
	for range circuit.MaxTransitions {
		s, _ = circuit.Evolve(s, now, circuit.Policy{}, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "x"})
		s, _ = circuit.Evolve(s, now, circuit.Policy{}, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "y"})
		now = now.Add(time.Second)
	}
	require.Len(t, s.Transitions, circuit.MaxTransitions)
	assert.Equal(t, int64(2*circuit.MaxTransitions), s.Transitions[len(s.Transitions)-1].Seq)
	assert.Equal(t, int64(circuit.MaxTransitions), s.Counts.Opened)
	assert.Equal(t, int64(circuit.MaxTransitions), s.Counts.Closed)
}

func TestPolicyResolve(t *testing.T) {
	p, err := circuit.Policy{}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, circuit.DefaultPolicy, p, "the zero policy is the default")
	for _, c := range []struct {
		p    circuit.Policy
		want string
	}{
		{circuit.Policy{ConsecutiveFailures: -1}, "consecutiveFailures must be from 1 to 100000, got -1"},
		{circuit.Policy{FailureRatio: 1.5}, "failureRatio must be above 0 and at most 1, got 1.5"},
		{circuit.Policy{Window: time.Millisecond}, "window must be from 1s to 1h, got 1ms"},
		{circuit.Policy{CoolDown: time.Minute, MaxCoolDown: time.Second}, "maxCoolDown must be from coolDown (1m0s) to 24h, got 1s"},
		{circuit.Policy{Successes: 101}, "successes must be from 1 to 100, got 101"},
		{circuit.Policy{ProbeFailures: -2}, "probeFailures must be from 1 to 100, got -2"},
		{circuit.Policy{Jitter: 0.95}, "jitter must be at most 0.9 (negative: none), got 0.95"},
	} {
		_, err := c.p.Resolve()
		require.ErrorIs(t, err, circuit.ErrInvalidOption)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestParseFunction(t *testing.T) {
	f, err := circuit.ParseFunction("shop.Mailer.send")
	require.NoError(t, err)
	assert.Equal(t, mailer, f)
	assert.Equal(t, "shop.Mailer.send", f.String())
	for _, bad := range []string{"", "shop.Mailer", "a.b.c.d", "shop..send", "shop.Mail er.send"} {
		_, err := circuit.ParseFunction(bad)
		assert.ErrorIs(t, err, circuit.ErrInvalidFunction, bad)
	}
}

// An incident keeps when it began, how often the circuit opened within it
// and every call it refused, across its re-opens; the next incident counts
// afresh.
func TestAnIncidentCountsItsReopens(t *testing.T) {
	s := open()
	s, _ = circuit.Evolve(s, at(time.Second), policy, circuit.Refusals{N: 5})
	for i, probeAt := range []time.Duration{10 * time.Second, 40 * time.Second} {
		var ok bool
		s, ok = circuit.Evolve(s, at(probeAt+time.Hour*time.Duration(i)), policy, circuit.Claim{Instance: "i1", ID: "p"})
		require.True(t, ok, "probe %d claimed", i)
		s, ok = circuit.Evolve(s, at(probeAt+time.Hour*time.Duration(i)+time.Second), policy, circuit.ProbeFailure{ID: "p", Last: smtp})
		require.True(t, ok, "probe %d failed", i)
		s, _ = circuit.Evolve(s, at(probeAt+time.Hour*time.Duration(i)+2*time.Second), policy, circuit.Refusals{N: 3})
	}
	require.Equal(t, circuit.Open, s.Phase)
	assert.Equal(t, at(-time.Second).UnixMilli(), s.Incident.From, "the incident began with the first failure, not at the latest re-open")
	assert.Greater(t, s.Since, s.Incident.From+time.Hour.Milliseconds(), "the phase is the latest re-open's")
	assert.Equal(t, int64(3), s.Incident.Opens)
	assert.Equal(t, int64(11), s.Refused, "refused within the incident, across its re-opens")

	s, ok := circuit.Evolve(s, at(3*time.Hour), policy, circuit.OperatorSet{To: circuit.Closed, Actor: "ops", Reason: "smtp back"})
	require.True(t, ok)
	assert.Equal(t, int64(3), s.Incident.Opens, "a closed incident keeps its counts")
	s, _ = circuit.Evolve(s, at(4*time.Hour), policy, circuit.OperatorSet{To: circuit.Open, Actor: "ops", Reason: "maintenance"})
	assert.Equal(t, circuit.Incident{From: at(4 * time.Hour).UnixMilli(), Opens: 1}, s.Incident, "a new incident counts afresh")
}
