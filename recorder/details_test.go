package recorder_test

import (
	"context"
	stderrors "errors"
	"fmt"
	"os"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/recorder"
)

type coded struct{}

func (coded) Error() string { return "coded failure" }
func (coded) Code() string  { return "PaymentDeclined" }

type invalidOrder struct{}

func (invalidOrder) Error() string { return "order is invalid" }
func (invalidOrder) BindingErrors() []aggregate.BindingError {
	return []aggregate.BindingError{{Name: "qty", Msg: "must be positive"}}
}

var errOutOfStock = stderrors.New("out of stock")

func TestDetails(t *testing.T) {
	require.NoError(t, recorder.RegisterCode(errOutOfStock, "OutOfStock"))
	cases := []struct {
		name, code, msg string
		err             error
		stack           bool
		binding         []aggregate.BindingError
	}{
		{name: "own code", err: fmt.Errorf("charge: %w", coded{}), code: "PaymentDeclined", msg: "charge: coded failure"},
		{name: "aggregate error code", err: &aggregate.Error{Kind: aggregate.ErrIllegalState, Message: "x"}, code: "IllegalState", msg: "x"},
		{name: "registered sentinel", err: fmt.Errorf("reserve: %w", errOutOfStock), code: "OutOfStock", msg: "reserve: out of stock"},
		{name: "deadline", err: fmt.Errorf("call: %w", context.DeadlineExceeded), code: "RequestTimeout", msg: "call: context deadline exceeded"},
		{name: "net-style timeout", err: os.ErrDeadlineExceeded, code: "RequestTimeout", msg: "i/o timeout"},
		{name: "generic", err: stderrors.New("boom"), code: "Unclassified", msg: "boom"},
		{name: "stack from cockroachdb", err: errors.Wrap(stderrors.New("boom"), "send"), code: recorder.GenericCode, msg: "send: boom", stack: true},
		{name: "binding errors", err: fmt.Errorf("place: %w", invalidOrder{}), code: recorder.GenericCode, msg: "place: order is invalid",
			binding: []aggregate.BindingError{{Name: "qty", Msg: "must be positive"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := recorder.Details(c.err)
			assert.Equal(t, c.code, d.ErrorCode)
			assert.Equal(t, c.msg, d.ErrorMsg)
			assert.Equal(t, c.binding, d.BindingErrors)
			if c.stack {
				assert.Contains(t, d.StackTrace, "details_test.go", "the stack names where the error was made")
			} else {
				assert.Empty(t, d.StackTrace, "no stack for an error without one")
			}
		})
	}
	assert.Error(t, recorder.RegisterCode(nil, "X"))
}
