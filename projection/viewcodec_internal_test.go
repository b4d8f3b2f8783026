package projection

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection/index"
)

// A field added to State is written by MarshalJSON and read by json/v2;
// this fails until the codec's walks know it: the fast reader must take
// the view, and give back every field.
func TestDecodeViewFieldsReadsEveryField(t *testing.T) {
	var v api.View
	fillEvery(reflect.ValueOf(&v).Elem())
	// Enums the reader refuses would keep the view from being written.
	v.State.Status, v.State.Function.FunctionKind, v.State.Recoverable = aggregate.StatusFailed, aggregate.KindEvent, aggregate.Recoverable
	data, err := appendView(&v)
	require.NoError(t, err)
	want, err := decodeView(data)
	require.NoError(t, err)
	require.Equal(t, v, want, "json/v2 reads back every field encodeView writes")
	var f viewFields
	require.True(t, decodeViewFields(data, &f), "the fast path takes a view with every field set: %s", data)
	require.Equal(t, want, f.view(), "the fast path reads every field")
}

// requireSameView fails unless the codec, where it takes data, reads the
// View json/v2 reads.
func requireSameView(t testing.TB, data []byte, f *viewFields) {
	t.Helper()
	if !decodeViewFields(data, f) {
		return
	}
	want, err := decodeView(data)
	require.NoError(t, err, "the fast path took %q, which decodeView refuses", data)
	require.Equal(t, want, f.view(), "the codec reads %q as json/v2 does", data)
	got, err := readView(data)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestViewOfFieldsIsDecodeViews(t *testing.T) {
	var f viewFields
	for name, v := range tableViews() {
		data, err := appendView(&v)
		require.NoError(t, err, name)
		require.True(t, decodeViewFields(data, &f), name)
		requireSameView(t, data, &f)
	}
	r := rand.New(rand.NewPCG(21, 22))
	for i := range 2000 {
		v := withStack(randomView(r, i))
		if i%3 == 0 {
			v.State.Error.BindingErrors = []aggregate.BindingError{{Name: randomString(r), Msg: randomString(r)}}
			v.State.EventID.AggregateID.TenantID = randomString(r)
			v.State.RetrySpec.Jitter = r.Float64()
		}
		data, err := appendView(&v)
		if err != nil {
			continue
		}
		requireSameView(t, data, &f)
	}
	for _, data := range [][]byte{
		mutate(t, `"stackTrace":"main.go:1"`, `"stackTrace":"main.go:1","bindingErrors":[]`),
		mutate(t, `"stackTrace":"main.go:1"`, `"stackTrace":"a\ud83d\ude00\/b","bindingErrors":[{"name":"\u00e9","msg":"\n"}]`),
		mutate(t, `"tenantId":"(0)"`, `"tenantId":"\u0028t\u0029"`),
	} {
		require.True(t, decodeViewFields(data, &f), "%s", data)
		requireSameView(t, data, &f)
	}
}

// FuzzViewOfFields: on any input the codec takes, it reads the View
// json/v2 reads.
func FuzzViewOfFields(f *testing.F) {
	for _, v := range tableViews() {
		data, err := appendView(&v)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out viewFields
		requireSameView(t, data, &out)
	})
}

// What the watch gives the index of a view read by the fast path is what
// the view decodeView reads holds.
func TestRecordOfFieldsIsTheViewsRecord(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	var f viewFields
	for i := range 500 {
		v := randomView(r, i)
		if i%2 == 1 {
			v = withStack(v)
			v.State.Error.Fingerprint, v.State.ID = randomString(r), "r"+randomString(r)
		}
		data, err := appendView(&v)
		if err != nil {
			continue
		}
		require.True(t, decodeViewFields(data, &f))
		want, err := decodeView(data)
		require.NoError(t, err)
		s, rec := &want.State, f.record()
		got := index.Fields[string]{ID: string(rec.ID), EventID: string(rec.EventID), AggregateID: string(rec.AggregateID),
			AggregateContext: string(rec.AggregateContext), AggregateType: string(rec.AggregateType), FunctionKind: string(rec.FunctionKind),
			FunctionContext: string(rec.FunctionContext), Processor: string(rec.Processor), Function: string(rec.Function),
			ErrorCode: string(rec.ErrorCode), ErrorMsg: string(rec.ErrorMsg), Fingerprint: string(rec.Fingerprint),
			Status: string(rec.Status), Recoverable: string(rec.Recoverable), Version: rec.Version, ExecuteAt: rec.ExecuteAt,
			TimeoutAt: rec.TimeoutAt, NextRetryAt: rec.NextRetryAt, Retries: rec.Retries, MaxRetries: rec.MaxRetries}
		require.Equal(t, index.Fields[string]{ID: s.ID, EventID: s.EventID.ID, AggregateID: s.EventID.AggregateID.AggregateID,
			AggregateContext: s.EventID.AggregateID.ContextName, AggregateType: s.EventID.AggregateID.AggregateName,
			FunctionKind: string(s.Function.FunctionKind), FunctionContext: s.Function.ContextName, Processor: s.Function.ProcessorName,
			Function: s.Function.Name, ErrorCode: s.Error.ErrorCode, ErrorMsg: s.Error.ErrorMsg, Fingerprint: s.Error.Fingerprint,
			Status: string(s.Status), Recoverable: string(s.Recoverable), Version: want.Version, ExecuteAt: s.ExecuteAt,
			TimeoutAt: s.RetryState.TimeoutAt, NextRetryAt: s.RetryState.NextRetryAt, Retries: s.RetryState.Retries,
			MaxRetries: s.RetrySpec.MaxRetries}, got)
	}
}
