package projection

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/amends-dev/amends/aggregate"
)

// appendState appends the JSON of s to b: the bytes State's MarshalJSON
// (encoding/json) writes, field by field instead of by reflection, which
// is on every view written. TestAppendStateWritesWhatMarshalJSONWrites and
// FuzzAppendState compare them. It fails only where MarshalJSON fails: a
// jitter that is NaN or infinite.
func appendState(b []byte, s *aggregate.State) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	e := &s.EventID
	b = append(b, `,"eventId":{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"aggregateId":{"contextName":`...)
	b = appendString(b, e.AggregateID.ContextName)
	b = append(b, `,"aggregateName":`...)
	b = appendString(b, e.AggregateID.AggregateName)
	b = append(b, `,"aggregateId":`...)
	b = appendString(b, e.AggregateID.AggregateID)
	b = append(b, `,"tenantId":`...)
	b = appendString(b, e.AggregateID.TenantID)
	b = append(b, `},"version":`...)
	b = strconv.AppendUint(b, e.Version, 10)
	if e.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, e.Seq, 10)
	}
	f := &s.Function
	b = append(b, `},"function":{"functionKind":`...)
	b = appendString(b, string(f.FunctionKind))
	b = append(b, `,"contextName":`...)
	b = appendString(b, f.ContextName)
	b = append(b, `,"processorName":`...)
	b = appendString(b, f.ProcessorName)
	b = append(b, `,"name":`...)
	b = appendString(b, f.Name)
	d := &s.Error
	b = append(b, `},"error":{"errorCode":`...)
	b = appendString(b, d.ErrorCode)
	b = append(b, `,"errorMsg":`...)
	b = appendString(b, d.ErrorMsg)
	b = append(b, `,"stackTrace":`...)
	b = appendString(b, d.StackTrace)
	if len(d.BindingErrors) > 0 {
		b = append(b, `,"bindingErrors":[`...)
		for i, be := range d.BindingErrors {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, be.Name)
			b = append(b, `,"msg":`...)
			b = appendString(b, be.Msg)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if d.Fingerprint != "" {
		b = append(b, `,"fingerprint":`...)
		b = appendString(b, d.Fingerprint)
	}
	b = append(b, `,"succeeded":`...)
	b = strconv.AppendBool(b, d.Succeeded())
	b = append(b, `},"executeAt":`...)
	b = strconv.AppendInt(b, s.ExecuteAt, 10)
	r := &s.RetrySpec
	b = append(b, `,"retrySpec":{"maxRetries":`...)
	b = strconv.AppendInt(b, int64(r.MaxRetries), 10)
	b = append(b, `,"minBackoff":`...)
	b = strconv.AppendInt(b, int64(r.MinBackoff), 10)
	b = append(b, `,"executionTimeout":`...)
	b = strconv.AppendInt(b, int64(r.ExecutionTimeout), 10)
	if r.MaxBackoff != 0 {
		b = append(b, `,"maxBackoff":`...)
		b = strconv.AppendInt(b, int64(r.MaxBackoff), 10)
	}
	if r.Jitter != 0 {
		b = append(b, `,"jitter":`...)
		var err error
		if b, err = appendFloat(b, r.Jitter); err != nil {
			return nil, err
		}
	}
	t := &s.RetryState
	b = append(b, `},"retryState":{"retries":`...)
	b = strconv.AppendInt(b, int64(t.Retries), 10)
	b = append(b, `,"retryAt":`...)
	b = strconv.AppendInt(b, t.RetryAt, 10)
	b = append(b, `,"timeoutAt":`...)
	b = strconv.AppendInt(b, t.TimeoutAt, 10)
	b = append(b, `,"nextRetryAt":`...)
	b = strconv.AppendInt(b, t.NextRetryAt, 10)
	b = append(b, `},"status":`...)
	b = appendString(b, string(s.Status))
	b = append(b, `,"recoverable":`...)
	b = appendString(b, string(s.Recoverable))
	if s.PreparedVersion != 0 {
		b = append(b, `,"preparedVersion":`...)
		b = strconv.AppendUint(b, s.PreparedVersion, 10)
	}
	b = append(b, `,"isBelowRetryThreshold":`...)
	b = strconv.AppendBool(b, s.IsBelowRetryThreshold())
	b = append(b, `,"isRetryable":`...)
	b = strconv.AppendBool(b, s.IsRetryable())
	return append(b, '}'), nil
}

var errUnsupportedFloat = errors.New("jitter is NaN or infinite, which JSON cannot hold")

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, errUnsupportedFloat
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendString appends s quoted as encoding/json writes a string, HTML
// escaping on: <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029
// escaped, and each byte of invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
