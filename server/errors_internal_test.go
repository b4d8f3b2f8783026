package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/index"
)

func TestCommandErrorStatusesAndCodes(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{&aggregate.Error{Kind: aggregate.ErrIllegalState, Message: "ExecutionFailed can not retry."}, http.StatusConflict, "IllegalState", "ExecutionFailed can not retry."},
		{&aggregate.Error{Kind: aggregate.ErrIllegalArgument, Message: "x must be y."}, http.StatusUnprocessableEntity, "IllegalArgument", "x must be y."},
		// Wow's code of an ArithmeticException is BadRequest; a 422 says IllegalArgument.
		{fmt.Errorf("prepare: %w", &aggregate.Error{Kind: aggregate.ErrArithmetic, Message: "long overflow"}), http.StatusUnprocessableEntity, "IllegalArgument", "long overflow"},
		{fmt.Errorf("append: %w", eventstore.ErrConflict), http.StatusConflict, "Conflict", "the record changed while the command ran"},
	} {
		ae := commandError("r1", c.err)
		if assert.NotNil(t, ae, "%v", c.err) {
			assert.Equal(t, c.status, ae.status, "%v", c.err)
			assert.Equal(t, c.code, ae.body.Code, "%v", c.err)
			assert.Contains(t, ae.body.Message, c.msg)
			assert.NotContains(t, ae.body.Message, "eventstore:")
		}
	}
}

func TestQueryErrorNamesTheField(t *testing.T) {
	ae := queryError("", &index.QueryError{Field: "cursor", Reason: "cursor \"x\" is not a cursor a list returned (its next)"})
	assert.Equal(t, "cursor", ae.body.Details["field"])
	assert.Equal(t, `cursor "x" is not a cursor a list returned (its next)`, ae.body.Message)
	ae = queryError("", fmt.Errorf("sort field must be one of [a], got \"b\": %w", projection.ErrInvalidQuery))
	assert.Equal(t, `sort field must be one of [a], got "b"`, ae.body.Message, "no package suffix")
	assert.Equal(t, "query", ae.body.Details["field"])
}
