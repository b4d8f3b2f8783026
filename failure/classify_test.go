package failure_test

import (
	"context"
	stderrors "errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
)

var (
	errBase     = stderrors.New("base")
	errOther    = stderrors.New("other")
	errDeclined = stderrors.New("payment declined")
)

func TestClassify(t *testing.T) {
	timeoutErr := &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}
	cases := []struct {
		name  string
		err   error
		rules failure.Rules
		want  aggregate.Recoverability
	}{
		{"nil is unknown", nil, failure.Rules{}, aggregate.RecoverabilityUnknown},
		{"plain error is unknown", errBase, failure.Rules{}, aggregate.RecoverabilityUnknown},
		{"deadline exceeded is recoverable", fmt.Errorf("call: %w", context.DeadlineExceeded), failure.Rules{}, aggregate.Recoverable},
		{"net timeout is recoverable", timeoutErr, failure.Rules{}, aggregate.Recoverable},
		{"canceled is unknown", context.Canceled, failure.Rules{}, aggregate.RecoverabilityUnknown},
		{"mark recoverable", failure.Recoverable(errBase), failure.Rules{}, aggregate.Recoverable},
		{"mark unrecoverable", fmt.Errorf("wrap: %w", failure.Unrecoverable(errBase)), failure.Rules{}, aggregate.Unrecoverable},
		{"outermost mark wins", failure.Recoverable(failure.Unrecoverable(errBase)), failure.Rules{}, aggregate.Recoverable},
		{"mark beats timeout", failure.Unrecoverable(context.DeadlineExceeded), failure.Rules{}, aggregate.Unrecoverable},
		{"rule beats mark", failure.Recoverable(errDeclined), failure.Rules{Unrecoverable: []failure.Matcher{failure.Is(errDeclined)}}, aggregate.Unrecoverable},
		{"nearest rule wins", fmt.Errorf("outer: %w", &wrap{errBase}),
			failure.Rules{Recoverable: []failure.Matcher{failure.Is(errBase)}, Unrecoverable: []failure.Matcher{failure.As[*wrap]()}}, aggregate.Unrecoverable},
		{"tie goes to recoverable", errBase,
			failure.Rules{Recoverable: []failure.Matcher{failure.Is(errBase)}, Unrecoverable: []failure.Matcher{failure.Is(errBase)}}, aggregate.Recoverable},
		{"unmatched rules fall through", errOther, failure.Rules{Unrecoverable: []failure.Matcher{failure.Is(errBase)}}, aggregate.RecoverabilityUnknown},
		{"joined errors are searched", stderrors.Join(errOther, errDeclined), failure.Rules{Unrecoverable: []failure.Matcher{failure.Is(errDeclined)}}, aggregate.Unrecoverable},
		{"as matches an interface", timeoutErr, failure.Rules{Unrecoverable: []failure.Matcher{failure.As[net.Error]()}}, aggregate.Unrecoverable},
		{"cockroach wrap is followed", errors.Wrap(errDeclined, "charge"), failure.Rules{Unrecoverable: []failure.Matcher{failure.Is(errDeclined)}}, aggregate.Unrecoverable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, failure.Classify(c.err, c.rules))
		})
	}
}

type wrap struct{ err error }

func (w *wrap) Error() string { return "wrap: " + w.err.Error() }
func (w *wrap) Unwrap() error { return w.err }

func TestRegister(t *testing.T) {
	unreg, err := failure.Register(failure.Is(fs.ErrNotExist), aggregate.Unrecoverable)
	require.NoError(t, err)
	got := failure.Classify(fmt.Errorf("open: %w", fs.ErrNotExist), failure.Rules{})
	assert.Equal(t, aggregate.Unrecoverable, got, "a registered sentinel is classified by the registry")
	got = failure.Classify(fs.ErrNotExist, failure.Rules{Recoverable: []failure.Matcher{failure.Is(fs.ErrNotExist)}})
	assert.Equal(t, aggregate.Recoverable, got, "function rules come before the registry")
	unreg()
	assert.Equal(t, aggregate.RecoverabilityUnknown, failure.Classify(fs.ErrNotExist, failure.Rules{}), "unregister removes it")

	_, err = failure.Register(failure.Is(errBase), aggregate.RecoverabilityUnknown)
	require.Error(t, err, "UNKNOWN cannot be registered")
	assert.Contains(t, err.Error(), "must be RECOVERABLE or UNRECOVERABLE")
}

func TestMarksKeepTheChain(t *testing.T) {
	err := failure.Unrecoverable(fmt.Errorf("x: %w", errBase))
	assert.ErrorIs(t, err, errBase)
	assert.Equal(t, "x: base", err.Error())
	assert.NoError(t, failure.Recoverable(nil))
	assert.NoError(t, failure.Unrecoverable(nil))
}
