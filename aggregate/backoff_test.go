package aggregate_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	. "github.com/amends-dev/amends/aggregate"
)

func TestNextRetryAtOfTable(t *testing.T) {
	cases := []struct {
		name    string
		spec    RetrySpec
		retries int32
		want    int64 // offset from t0 in ms
		field   string
		msg     string
	}{
		{name: "no cap: Wow's tenth retry", spec: RetrySpec{MinBackoff: 180}, retries: 10, want: 184_320_000},
		{name: "cap below the doubling", spec: RetrySpec{MinBackoff: 180, MaxBackoff: 3600}, retries: 10, want: 3_600_000},
		{name: "cap above the doubling", spec: RetrySpec{MinBackoff: 180, MaxBackoff: 3600}, retries: 2, want: 720_000},
		{name: "cap at huge retries does not overflow", spec: RetrySpec{MinBackoff: 1, MaxBackoff: 60}, retries: 1000, want: 60_000},
		{name: "cap with overflowing seconds", spec: RetrySpec{MinBackoff: math.MaxInt32, MaxBackoff: 60}, retries: 62, want: 60_000},
		{name: "cap below minBackoff caps the first interval", spec: RetrySpec{MinBackoff: 600, MaxBackoff: 60}, retries: 0, want: 60_000},
		{name: "zero backoff stays immediate", spec: RetrySpec{MaxBackoff: 60, Jitter: 1}, retries: 3, want: 0},
		{name: "jitter without cap still overflows like Wow", spec: RetrySpec{MinBackoff: 1, Jitter: 0.5}, retries: 63, msg: "Retry backoff exceeds the supported millisecond range."},
		{name: "negative cap", spec: RetrySpec{MinBackoff: 1, MaxBackoff: -1}, field: "maxBackoff", msg: "maxBackoff must be greater than or equal to 0."},
		{name: "jitter above 1", spec: RetrySpec{MinBackoff: 1, Jitter: 1.5}, field: "jitter", msg: "jitter must be a fraction from 0 to 1, got 1.5."},
		{name: "negative jitter", spec: RetrySpec{MinBackoff: 1, Jitter: -0.1}, field: "jitter", msg: "jitter must be a fraction from 0 to 1, got -0.1."},
		{name: "NaN jitter", spec: RetrySpec{MinBackoff: 1, Jitter: math.NaN()}, field: "jitter", msg: "jitter must be a fraction from 0 to 1, got NaN."},
		{name: "Wow's check comes first", spec: RetrySpec{MinBackoff: -1, MaxBackoff: -1}, field: "minBackoff", msg: "minBackoff must be greater than or equal to 0."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NextRetryAtOf("rec", c.spec, c.retries, t0)
			if c.msg != "" {
				require.Error(t, err)
				assert.EqualError(t, err, c.msg)
				if c.field != "" {
					assert.Equal(t, c.field, ErrorField(err), "the error names the field")
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, t0+c.want, got)
		})
	}
}

func TestValidateRetrySpecBeyondWow(t *testing.T) {
	require.NoError(t, ValidateRetrySpec(RetrySpec{MaxRetries: 1000, MinBackoff: 180, ExecutionTimeout: 120, MaxBackoff: 3600, Jitter: 0.2}),
		"a capped spec with many retries is valid")
	require.Error(t, ValidateRetrySpec(RetrySpec{MaxRetries: 1000, MinBackoff: 180, ExecutionTimeout: 120}), "Wow's overflow without a cap")
	err := ValidateRetrySpec(RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1, Jitter: 2})
	require.ErrorIs(t, err, ErrIllegalArgument)
	assert.Equal(t, "jitter", ErrorField(err))
	_, err = Decide(State{}, ApplyRetrySpec{MaxRetries: 1}, time.UnixMilli(t0))
	require.ErrorIs(t, err, ErrNotFound)
}

// Absent maxBackoff and jitter, the formula is exactly Wow's, errors
// included.
func TestPropertyNextRetryAtOfIsWowWhenAbsent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		minBackoff := rapid.Int32().Draw(t, "minBackoff")
		retries := rapid.Int32Range(-2, 70).Draw(t, "retries")
		from := rapid.Int64().Draw(t, "from")
		id := rapid.String().Draw(t, "id")
		want, wantErr := NextRetryAt(minBackoff, retries, from)
		got, err := NextRetryAtOf(id, RetrySpec{MinBackoff: minBackoff}, retries, from)
		if wantErr != nil {
			if err == nil || err.Error() != wantErr.Error() {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("got %d, %v; want %d", got, err, want)
		}
	})
}

// With a cap and jitter, every interval lies in [(1-j)·capped, capped],
// capped = min(minBackoff·2^retries, maxBackoff) seconds, and the same
// (id, attempt) always gives the same time.
func TestPropertyCappedJitteredBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := RetrySpec{
			MinBackoff: rapid.Int32Range(0, math.MaxInt32).Draw(t, "minBackoff"),
			MaxBackoff: rapid.Int32Range(1, math.MaxInt32).Draw(t, "maxBackoff"),
			Jitter:     rapid.Float64Range(0, 1).Draw(t, "jitter"),
		}
		retries := rapid.Int32Range(0, 200).Draw(t, "retries")
		id := rapid.String().Draw(t, "id")
		from := rapid.Int64Range(0, 1<<50).Draw(t, "from")
		got, err := NextRetryAtOf(id, spec, retries, from)
		if err != nil {
			t.Fatalf("a capped spec never fails: %v", err)
		}
		capped := float64(spec.MaxBackoff) * 1000
		if spec.MinBackoff == 0 {
			capped = 0
		} else if retries < 63 {
			capped = math.Min(capped, float64(spec.MinBackoff)*math.Pow(2, float64(retries))*1000)
		}
		interval := float64(got - from)
		if interval > capped || interval < (1-spec.Jitter)*capped-1 {
			t.Fatalf("interval %v outside [%v, %v]", interval, (1-spec.Jitter)*capped, capped)
		}
		if interval > float64(spec.MaxBackoff)*1000 {
			t.Fatalf("interval %v above the cap", interval)
		}
		again, _ := NextRetryAtOf(id, spec, retries, from)
		if again != got {
			t.Fatalf("not deterministic: %d then %d", got, again)
		}
	})
}

func TestJitterSpreadsRecordsAndAttempts(t *testing.T) {
	spec := RetrySpec{MinBackoff: 60, MaxBackoff: 3600, Jitter: 0.5}
	seen := map[int64]bool{}
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		at, err := NextRetryAtOf(id, spec, 3, t0)
		require.NoError(t, err)
		seen[at] = true
	}
	assert.Greater(t, len(seen), 4, "different records draw different jitter: %v", seen)
	a, _ := NextRetryAtOf("a", spec, 3, t0)
	b, _ := NextRetryAtOf("a", spec, 4, t0)
	assert.NotEqual(t, a+480_000, b, "the next attempt draws again rather than doubling the same draw")
}

// Decide uses the record id and attempt: preparing a jittered record twice
// from the same state gives the same retry state.
func TestDecideJitterIsReproducible(t *testing.T) {
	spec := RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30, MaxBackoff: 300, Jitter: 0.5}
	c := create
	c.RetrySpec = &spec
	s := State{ID: "rec-1"}
	evs, err := Decide(s, c, time.UnixMilli(t0))
	require.NoError(t, err)
	s = EvolveAll(s, evs...)
	want, _ := NextRetryAtOf("rec-1", spec, 0, t0)
	assert.Equal(t, want, s.RetryState.NextRetryAt)
	now := time.UnixMilli(s.RetryState.NextRetryAt)
	e1, err := Decide(s, PrepareCompensation{}, now)
	require.NoError(t, err)
	e2, _ := Decide(s, PrepareCompensation{}, now)
	assert.Equal(t, e1, e2)
	next := e1[0].(CompensationPrepared).RetryState.NextRetryAt - now.UnixMilli()
	assert.LessOrEqual(t, next, int64(120_000))
	assert.GreaterOrEqual(t, next, int64(60_000))
}

// The remaining schedule is what the aggregate does when every replay is
// prepared on time and fails at once.
func TestPropertyRemainingScheduleMatchesDecide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := RetrySpec{
			MaxRetries:       rapid.Int32Range(0, 12).Draw(t, "maxRetries"),
			MinBackoff:       rapid.Int32Range(0, 600).Draw(t, "minBackoff"),
			ExecutionTimeout: 30,
			MaxBackoff:       rapid.SampledFrom([]int32{0, 1, 600, 3600}).Draw(t, "maxBackoff"),
			Jitter:           rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(t, "jitter"),
		}
		c := create
		c.RetrySpec = &spec
		s := State{ID: rapid.StringMatching(`[a-z0-9-]{1,12}`).Draw(t, "id")}
		evs, err := Decide(s, c, time.UnixMilli(t0))
		if err != nil {
			t.Fatal(err)
		}
		s = EvolveAll(s, evs...)
		sched := RemainingSchedule(s, 0)
		if len(sched) != int(spec.MaxRetries) {
			t.Fatalf("%d retries scheduled, want %d", len(sched), spec.MaxRetries)
		}
		for _, want := range sched {
			now := time.UnixMilli(want.At)
			if !s.Schedulable(now) || (want.At > t0 && s.Schedulable(time.UnixMilli(want.At-1)) && s.RetryState.NextRetryAt == want.At) {
				t.Fatalf("retry %d not due exactly at %d", want.Attempt, want.At)
			}
			evs, err := Decide(s, PrepareCompensation{}, now)
			if err != nil {
				t.Fatal(err)
			}
			s = EvolveAll(s, evs...)
			if s.Attempt() != want.Attempt {
				t.Fatalf("attempt %d, want %d", s.Attempt(), want.Attempt)
			}
			evs, err = Decide(s, ApplyExecutionFailed{Error: boom, ExecuteAt: want.At}, now)
			if err != nil {
				t.Fatal(err)
			}
			s = EvolveAll(s, evs...)
		}
		if RemainingSchedule(s, 0) != nil {
			t.Fatal("nothing remains after the last retry")
		}
	})
}

func TestRemainingScheduleEdges(t *testing.T) {
	s := State{ID: "r", Status: StatusFailed, Recoverable: Unrecoverable, RetrySpec: DefaultRetrySpec}
	assert.Empty(t, RemainingSchedule(s, 0), "UNRECOVERABLE records are not retried automatically")
	s.Recoverable, s.Status = Recoverable, StatusSucceeded
	assert.Empty(t, RemainingSchedule(s, 0), "a succeeded record has nothing left")
	s.Status = StatusFailed
	s.RetrySpec = RetrySpec{MaxRetries: math.MaxInt32, MinBackoff: 1, MaxBackoff: 1}
	assert.Len(t, RemainingSchedule(s, 0), MaxSchedule, "bounded")
	assert.Len(t, RemainingSchedule(s, 3), 3)
	s.RetrySpec = DefaultRetrySpec
	s.RetryState.NextRetryAt = t0
	got := RemainingSchedule(s, 0)
	require.Len(t, got, 10)
	assert.Equal(t, ScheduledRetry{Attempt: 1, At: t0}, got[0])
	assert.Equal(t, t0+360_000, got[1].At, "Wow's doubling after the first")
}
