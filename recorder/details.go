package recorder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	crdb "github.com/cockroachdb/errors"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
)

// GenericCode is the code of an error that names none: no Code() method,
// no RegisterCode entry and no built-in match. The reference's converter
// gives such exceptions "BadRequest", which reads as the caller's mistake
// in lists and summaries (an SMTP greylisting reply is none); amends uses
// this neutral code instead. Give your errors a Code() method or
// RegisterCode them to group records by a name of your own.
const GenericCode = "Unclassified"

// Validation is implemented by validation errors: the invalid fields become
// the record's binding errors.
type Validation interface {
	error
	BindingErrors() []aggregate.BindingError
}

var codes struct {
	mu      sync.RWMutex
	entries []codeEntry
}

type codeEntry struct {
	target error
	code   string
}

// builtinCodes apply after the registered ones.
var builtinCodes = []codeEntry{
	{context.DeadlineExceeded, "RequestTimeout"},
	{context.Canceled, "Canceled"},
	{fs.ErrNotExist, "NotFound"},
}

// RegisterCode gives errors matching target (errors.Is) the code code,
// unless they carry a Code() of their own. The first registration that
// matches wins. It fails for a nil target or an empty code. Safe for
// concurrent use; meant for start-up.
func RegisterCode(target error, code string) error {
	if target == nil || code == "" {
		return fmt.Errorf("register code %q for %v: the target and the code must be set: %w", code, target, ErrInvalidOption)
	}
	codes.mu.Lock()
	codes.entries = append(codes.entries, codeEntry{target, code})
	codes.mu.Unlock()
	return nil
}

// Code returns err's stable code: the Code() of the first error in its
// chain that has one, else the code registered for a sentinel it matches,
// else a built-in code (RequestTimeout for deadlines and timeouts, Canceled,
// NotFound for fs.ErrNotExist), else GenericCode.
func Code(err error) string {
	var coded interface{ Code() string }
	if errors.As(err, &coded) && coded.Code() != "" {
		return coded.Code()
	}
	codes.mu.RLock()
	entries := codes.entries
	codes.mu.RUnlock()
	for _, list := range [][]codeEntry{entries, builtinCodes} {
		for _, e := range list {
			if crdb.Is(err, e.target) {
				return e.code
			}
		}
	}
	if failure.IsTimeout(err) {
		return "RequestTimeout"
	}
	return GenericCode
}

// Details returns the ErrorDetails of err: code (see Code), message, stack
// trace (the %+v rendering of err when an error in its chain carries a
// stack, as cockroachdb/errors errors do; empty otherwise) and binding
// errors (from a Validation in the chain).
func Details(err error) aggregate.ErrorDetails {
	if err == nil {
		return aggregate.ErrorDetails{ErrorCode: "Ok"}
	}
	d := aggregate.ErrorDetails{ErrorCode: Code(err), ErrorMsg: err.Error()}
	if hasStack(err) {
		d.StackTrace = fmt.Sprintf("%+v", err)
	}
	var v Validation
	if errors.As(err, &v) {
		d.BindingErrors = v.BindingErrors()
	}
	return d
}

func hasStack(err error) bool {
	for n := 0; err != nil && n < 64; n++ {
		if crdb.GetReportableStackTrace(err) != nil {
			return true
		}
		err = crdb.UnwrapOnce(err)
	}
	return false
}
