package projection

import (
	"fmt"
	"strconv"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/jsonlex"
)

// The one codec of the stored view. Its layout is written once, as walks
// over the members of each object (codec.view, codec.state, ...): writing,
// the walk appends each member of a View; reading, it matches each member
// in a stored view and keeps it in viewFields. So the writer and the fast
// reader cannot disagree on a member, its order or whether it is
// optional. The bytes are those encoding/json writes for a View (State's
// MarshalJSON); TestAppendStateWritesEveryField and
// TestDecodeViewFieldsReadsEveryField fail when a field is added to
// aggregate.State and the walks do not know it. A stored view in any
// other shape is read with json/v2 (decodeView).

// codec is one walk of the layout: writing (out) or reading (in). A
// reading walk stops matching at the first member that is not there (ok
// turns false); a writing walk fails only on a jitter JSON cannot hold.
type codec struct {
	writing bool
	out     []byte
	in      jsonlex.Scanner
	f       *viewFields // reading: what is kept
	ok      bool
	err     error
}

// lit is a fixed part of the layout: names and punctuation.
func (c *codec) lit(s string) {
	if c.writing {
		c.out = append(c.out, s...)
	} else if c.ok {
		c.ok = c.in.Lit(s)
	}
}

// opt is an optional member, named by its literal: written if present,
// and reports whether it is there.
func (c *codec) opt(name string, present bool) bool {
	if c.writing {
		if present {
			c.out = append(c.out, name...)
		}
		return present
	}
	return c.ok && c.in.Lit(name)
}

// str is a string the index reads: kept unescaped (viewFields).
func (c *codec) str(v string, dst *[]byte) {
	if c.writing {
		c.out = jsonlex.AppendString(c.out, v)
	} else if c.ok {
		*dst, c.ok = c.in.StringInto(&c.f.buf)
	}
}

// text is a string only a full decode reads: checked, kept as written.
func (c *codec) text(v string, dst *jsonlex.Text) {
	if c.writing {
		c.out = jsonlex.AppendString(c.out, v)
	} else if c.ok {
		*dst, c.ok = c.in.String()
	}
}

func (c *codec) uint(v uint64, dst *uint64) {
	if c.writing {
		c.out = strconv.AppendUint(c.out, v, 10)
	} else if c.ok {
		*dst, c.ok = c.in.Uint()
	}
}

func (c *codec) int64(v int64, dst *int64) {
	if c.writing {
		c.out = strconv.AppendInt(c.out, v, 10)
	} else if c.ok {
		*dst, c.ok = c.in.Int(64)
	}
}

func (c *codec) int32(v int32, dst *int32) {
	if c.writing {
		c.out = strconv.AppendInt(c.out, int64(v), 10)
	} else if c.ok {
		var n int64
		n, c.ok = c.in.Int(32)
		*dst = int32(n)
	}
}

// bool is a member derived from the others: written, and read only for
// its syntax.
func (c *codec) bool(v bool) {
	if c.writing {
		c.out = strconv.AppendBool(c.out, v)
	} else if c.ok {
		_, c.ok = c.in.Bool()
	}
}

// float is the jitter, kept as written.
func (c *codec) float(v float64, dst *[]byte) {
	switch {
	case c.writing && c.err == nil:
		var err error
		if c.out, err = jsonlex.AppendFloat(c.out, v); err != nil {
			c.err = fmt.Errorf("jitter is %w", err)
		}
	case !c.writing && c.ok:
		*dst, c.ok = c.in.Float()
	}
}

// The layout: the members of each object in the order encoding/json
// writes them (State's fields, then its derived ones).

func (c *codec) view(v *api.View) {
	c.lit(`{"state":`)
	c.state(&v.State)
	c.lit(`,"version":`)
	c.uint(v.Version, &c.f.version)
	c.lit(`,"updatedAt":`)
	c.int64(v.UpdatedAt, &c.f.updatedAt)
	c.lit(`,"seq":`)
	c.uint(v.Seq, &c.f.seq)
	c.lit(`}`)
}

func (c *codec) state(s *aggregate.State) {
	f := c.f
	c.lit(`{"id":`)
	c.str(s.ID, &f.id)
	c.eventID(&s.EventID)
	c.function(&s.Function)
	c.error(&s.Error)
	c.lit(`,"executeAt":`)
	c.int64(s.ExecuteAt, &f.executeAt)
	c.retrySpec(&s.RetrySpec)
	c.retryState(&s.RetryState)
	c.lit(`,"status":`)
	c.str(string(s.Status), &f.status)
	c.lit(`,"recoverable":`)
	c.str(string(s.Recoverable), &f.recoverable)
	if c.opt(`,"preparedVersion":`, s.PreparedVersion != 0) {
		c.uint(s.PreparedVersion, &f.preparedVersion)
	}
	c.lit(`,"isBelowRetryThreshold":`)
	c.bool(s.IsBelowRetryThreshold())
	c.lit(`,"isRetryable":`)
	c.bool(s.IsRetryable())
	c.lit(`}`)
}

func (c *codec) eventID(e *aggregate.EventID) {
	f := c.f
	c.lit(`,"eventId":{"id":`)
	c.str(e.ID, &f.eventID)
	c.lit(`,"aggregateId":{"contextName":`)
	c.str(e.AggregateID.ContextName, &f.aggContext)
	c.lit(`,"aggregateName":`)
	c.str(e.AggregateID.AggregateName, &f.aggName)
	c.lit(`,"aggregateId":`)
	c.str(e.AggregateID.AggregateID, &f.aggregateID)
	c.lit(`,"tenantId":`)
	c.text(e.AggregateID.TenantID, &f.tenantID)
	c.lit(`},"version":`)
	c.uint(e.Version, &f.eventVersion)
	if c.opt(`,"seq":`, e.Seq != 0) {
		c.uint(e.Seq, &f.eventSeq)
	}
	c.lit(`}`)
}

func (c *codec) function(fn *aggregate.FunctionInfo) {
	f := c.f
	c.lit(`,"function":{"functionKind":`)
	c.str(string(fn.FunctionKind), &f.fnKind)
	c.lit(`,"contextName":`)
	c.str(fn.ContextName, &f.fnContext)
	c.lit(`,"processorName":`)
	c.str(fn.ProcessorName, &f.fnProcessor)
	c.lit(`,"name":`)
	c.str(fn.Name, &f.fnName)
	c.lit(`}`)
}

func (c *codec) error(e *aggregate.ErrorDetails) {
	f := c.f
	c.lit(`,"error":{"errorCode":`)
	c.str(e.ErrorCode, &f.errorCode)
	c.lit(`,"errorMsg":`)
	c.str(e.ErrorMsg, &f.errorMsg)
	c.lit(`,"stackTrace":`)
	c.text(e.StackTrace, &f.stackTrace)
	if c.opt(`,"bindingErrors":[`, len(e.BindingErrors) > 0) {
		c.bindingErrors(e.BindingErrors)
	}
	if c.opt(`,"fingerprint":`, e.Fingerprint != "") {
		c.str(e.Fingerprint, &f.fingerprint)
	}
	c.lit(`,"succeeded":`)
	c.bool(e.Succeeded())
	c.lit(`}`)
}

// bindingErrors is the array after its opening bracket: written from es,
// read into viewFields (an empty array included, which json/v2 reads as
// an empty list).
func (c *codec) bindingErrors(es []aggregate.BindingError) {
	if c.writing {
		for i := range es {
			if i > 0 {
				c.lit(",")
			}
			c.bindingError(&es[i], &bindingErrorText{})
		}
		c.lit("]")
		return
	}
	f := c.f
	f.hasBindingErrors = true
	if c.ok && c.in.Lit("]") {
		return
	}
	for c.ok {
		f.bindingErrors = append(f.bindingErrors, bindingErrorText{})
		c.bindingError(&aggregate.BindingError{}, &f.bindingErrors[len(f.bindingErrors)-1])
		if !c.ok || !c.in.Lit(",") {
			break
		}
	}
	c.lit("]")
}

func (c *codec) bindingError(be *aggregate.BindingError, dst *bindingErrorText) {
	c.lit(`{"name":`)
	c.text(be.Name, &dst.name)
	c.lit(`,"msg":`)
	c.text(be.Msg, &dst.msg)
	c.lit(`}`)
}

func (c *codec) retrySpec(r *aggregate.RetrySpec) {
	f := c.f
	c.lit(`,"retrySpec":{"maxRetries":`)
	c.int32(r.MaxRetries, &f.maxRetries)
	c.lit(`,"minBackoff":`)
	c.int32(r.MinBackoff, &f.minBackoff)
	c.lit(`,"executionTimeout":`)
	c.int32(r.ExecutionTimeout, &f.executionTimeout)
	if c.opt(`,"maxBackoff":`, r.MaxBackoff != 0) {
		c.int32(r.MaxBackoff, &f.maxBackoff)
	}
	if c.opt(`,"jitter":`, r.Jitter != 0) {
		c.float(r.Jitter, &f.jitter)
	}
	c.lit(`}`)
}

func (c *codec) retryState(r *aggregate.RetryState) {
	f := c.f
	c.lit(`,"retryState":{"retries":`)
	c.int32(r.Retries, &f.retries)
	c.lit(`,"retryAt":`)
	c.int64(r.RetryAt, &f.retryAt)
	c.lit(`,"timeoutAt":`)
	c.int64(r.TimeoutAt, &f.timeoutAt)
	c.lit(`,"nextRetryAt":`)
	c.int64(r.NextRetryAt, &f.nextRetryAt)
	c.lit(`}`)
}
