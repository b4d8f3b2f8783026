package circuit_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/rollout"
)

func drainJSON(t testing.TB, d circuit.Drain) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	require.NoError(t, err)
	return b
}

var goodDrain = circuit.Drain{Function: mailer, From: t0.UnixMilli(), To: t0.Add(time.Minute).UnixMilli(), Progress: rollout.Progress{
	Phase: circuit.DrainSteps, StartedAt: t0.Add(time.Minute).UnixMilli(), Size: 8, Rate: 200, Judged: 3, Batch: []rollout.Record{{ID: "r-1", Attempt: 1}},
	BatchAt: t0.Add(time.Minute).UnixMilli(), Released: 7, Succeeded: 7, UpdatedAt: t0.Add(time.Minute).UnixMilli()}}

// A drain stored before the rollout engine (the same JSON) reads as it was.
func TestDecodeDrainOfEarlierVersions(t *testing.T) {
	old := `{"function":{"context":"shop","processor":"Mailer","name":"send"},"phase":"steps","from":` + strconv.FormatInt(t0.UnixMilli(), 10) +
		`,"to":` + strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10) + `,"startedAt":` + strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10) +
		`,"size":8,"rate":200,"steps":3,"batch":[{"id":"r-1","attempt":1}],"batchAt":` + strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10) +
		`,"probes":0,"released":7,"succeeded":7,"failed":0,"updatedAt":` + strconv.FormatInt(t0.Add(time.Minute).UnixMilli(), 10) + `}`
	got, err := circuit.DecodeDrain(mailer.String(), []byte(old), t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, goodDrain, got)
}

// Every field of a stored drain is checked, and the error names it.
func TestDecodeDrainRefusesEachBadField(t *testing.T) {
	now := t0.Add(time.Hour)
	got, err := circuit.DecodeDrain(mailer.String(), drainJSON(t, goodDrain), now)
	require.NoError(t, err)
	assert.Equal(t, goodDrain, got)
	for _, c := range []struct {
		field  string
		key    string
		change func(d *circuit.Drain)
	}{
		{"key", "order.OrderProjector", func(*circuit.Drain) {}},
		{"function", "order.OrderProjector.other", func(*circuit.Drain) {}},
		{"phase", "", func(d *circuit.Drain) { d.Phase = "draining" }},
		{"from", "", func(d *circuit.Drain) { d.From = -1 }},
		{"updatedAt", "", func(d *circuit.Drain) { d.UpdatedAt = now.Add(time.Hour).UnixMilli() }},
		{"to", "", func(d *circuit.Drain) { d.To = d.From - 1 }},
		{"to", "", func(d *circuit.Drain) { d.To = 0 }},
		{"size", "", func(d *circuit.Drain) { d.Size = 0 }},
		{"size", "", func(d *circuit.Drain) { d.Size = rollout.MaxBatch + 1 }},
		{"rate", "", func(d *circuit.Drain) { d.Rate = 0 }},
		{"rate", "", func(d *circuit.Drain) { d.Rate = circuit.MaxDrainRate + 1 }},
		{"steps", "", func(d *circuit.Drain) { d.Judged = -1 }},
		{"nextAt", "", func(d *circuit.Drain) { d.NextAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() }},
		{"batch[1].id", "", func(d *circuit.Drain) { d.Batch = append(d.Batch, d.Batch[0]) }},
		{"probes", "", func(d *circuit.Drain) { d.Probes = -1 }},
		{"batch", "", func(d *circuit.Drain) { d.Phase = circuit.DrainDone }},
		{"batch[0].id", "", func(d *circuit.Drain) { d.Batch[0].ID = "" }},
		{"batch[0].attempt", "", func(d *circuit.Drain) { d.Batch[0].Attempt = 0 }},
		{"probe.attempt", "", func(d *circuit.Drain) { d.Probe = &rollout.Record{ID: "r", Attempt: -2} }},
		{"released", "", func(d *circuit.Drain) { d.Succeeded = 9 }},
		{"released", "", func(d *circuit.Drain) { d.Failed = -1 }},
		{"note", "", func(d *circuit.Drain) { d.Note = strings.Repeat("n", 5000) }},
		{"note", "", func(d *circuit.Drain) { d.Note = "a\x01b" }},
	} {
		t.Run(c.field, func(t *testing.T) {
			d := goodDrain
			d.Batch = append([]rollout.Record(nil), goodDrain.Batch...)
			c.change(&d)
			key := c.key
			if key == "" {
				key = mailer.String()
			}
			_, err := circuit.DecodeDrain(key, drainJSON(t, d), now)
			require.ErrorIs(t, err, circuit.ErrInvalidDrain)
			assert.Contains(t, err.Error(), c.field)
		})
	}
	_, err = circuit.DecodeDrain(mailer.String(), []byte(`{"phase":`), now)
	assert.ErrorIs(t, err, circuit.ErrInvalidDrain)
}

func FuzzDecodeDrain(f *testing.F) {
	b, _ := json.Marshal(goodDrain)
	f.Add(mailer.String(), b)
	f.Add("a.b.c", []byte(`{"phase":"steps","rate":1e400}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		d, err := circuit.DecodeDrain(key, value, t0.Add(time.Hour))
		if err != nil {
			return
		}
		again, err := circuit.DecodeDrain(key, drainJSON(t, d), t0.Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, d, again)
	})
}
