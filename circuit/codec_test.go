package circuit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
)

func encode(t testing.TB, s circuit.State) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return b
}

func TestDecodeStateRoundTrip(t *testing.T) {
	for _, s := range []circuit.State{circuit.New(mailer), open(), halfOpen()} {
		got, err := circuit.DecodeState(mailer.String(), encode(t, s), at(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
}

// Every field of a stored circuit is checked: each change below breaks
// one rule, and the error names the field.
func TestDecodeStateRefusesEachBadField(t *testing.T) {
	now := at(time.Minute)
	cases := []struct {
		field  string
		key    string
		change func(s *circuit.State)
	}{
		{"key", "shop.Mailer", func(*circuit.State) {}},
		{"function", "shop.Mailer.other", func(*circuit.State) {}},
		{"phase", "", func(s *circuit.State) { s.Phase = "AJAR" }},
		{"since", "", func(s *circuit.State) { s.Since = -1 }},
		{"updatedAt", "", func(s *circuit.State) { s.UpdatedAt = now.Add(time.Hour).UnixMilli() }},
		{"until", "", func(s *circuit.State) { s.Until = now.Add(48 * time.Hour).UnixMilli() }},
		{"until", "", func(s *circuit.State) { s.Until = 0 }},
		{"until", "", func(s *circuit.State) { s.Forced = true }},
		{"coolDownMs", "", func(s *circuit.State) { s.CoolDownMs = -5 }},
		{"probe", "", func(s *circuit.State) { s.Probe = &circuit.Probe{Instance: "i", ID: "p", At: 1, Until: 2} }},
		{"refused", "", func(s *circuit.State) { s.Refused = -1 }},
		{"refusedTotal", "", func(s *circuit.State) { s.Refused, s.RefusedTotal = 5, 4 }},
		{"incident.to", "", func(s *circuit.State) { s.Incident.To = s.Incident.From - 1 }},
		{"last.message", "", func(s *circuit.State) { s.Last.Message = strings.Repeat("x", circuit.MaxMessageBytes+1) }},
		{"last.code", "", func(s *circuit.State) { s.Last.Code = "a\x00b" }},
		{"last.fingerprint", "", func(s *circuit.State) { s.Last.Fingerprint = "fp1-nothex" }},
		{"recoverable", "", func(s *circuit.State) { s.Last.Recoverable = "MAYBE" }},
		{"counts.opened", "", func(s *circuit.State) { s.Counts.Opened = -1 }},
		{"transitions", "", func(s *circuit.State) {
			for range circuit.MaxTransitions + 1 {
				s.Transitions = append(s.Transitions, s.Transitions[0])
			}
		}},
		{"transitions[0].seq", "", func(s *circuit.State) { s.Transitions[0].Seq = 0 }},
		{"transitions[0].seq", "", func(s *circuit.State) { s.Transitions[0].Seq = 99 }},
		{"transitions[0].cause", "", func(s *circuit.State) { s.Transitions[0].Cause = "whim" }},
		{"transitions[0]", "", func(s *circuit.State) { s.Transitions[0].To = "AJAR" }},
		{"transitions[0]", "", func(s *circuit.State) { s.Transitions[0].Failures = -3 }},
		{"transitions[0].reason", "", func(s *circuit.State) { s.Transitions[0].Reason = strings.Repeat("r", circuit.MaxReasonBytes+1) }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			s := open()
			c.change(&s)
			key := c.key
			if key == "" {
				key = mailer.String()
			}
			_, err := circuit.DecodeState(key, encode(t, s), now)
			require.ErrorIs(t, err, circuit.ErrInvalid)
			assert.Contains(t, err.Error(), c.field)
		})
	}
	_, err := circuit.DecodeState(mailer.String(), []byte(`{"phase":`), now)
	assert.ErrorIs(t, err, circuit.ErrInvalid, "not JSON")
	_, err = circuit.DecodeState(mailer.String(), make([]byte, circuit.MaxValue+1), now)
	assert.ErrorIs(t, err, circuit.ErrInvalid, "too large")
}

func FuzzDecodeState(f *testing.F) {
	for _, s := range []circuit.State{circuit.New(mailer), open(), halfOpen()} {
		b, _ := json.Marshal(s)
		f.Add(mailer.String(), b)
	}
	f.Add("a.b.c", []byte(`{"phase":"OPEN","until":-1}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		s, err := circuit.DecodeState(key, value, at(time.Minute))
		if err != nil {
			return
		}
		// What decodes encodes and decodes to the same.
		again, err := circuit.DecodeState(key, encode(t, s), at(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, s, again)
	})
}
