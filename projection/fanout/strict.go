package fanout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/amends-dev/amends/api"
)

// ErrIncomplete: an answer would lack the records of some partitions. The
// error names them and the instances that did not answer (Incomplete).
var ErrIncomplete = errors.New("partitions missing from the answer")

// Incomplete is the error of an answer that would lack partitions.
type Incomplete struct {
	Coverage
}

func (e *Incomplete) Error() string {
	var why []string
	for _, u := range e.Unanswered {
		why = append(why, fmt.Sprintf("%s: %s", u.Instance, u.Reason))
	}
	var msg string
	switch {
	case len(e.Missing) > 0:
		msg = fmt.Sprintf("no instance answered for partitions %s", strings.Join(e.Missing, ", "))
	default:
		msg = "no instance answered, so none named the processors the plan does not place yet"
	}
	if len(why) > 0 {
		msg += " (" + strings.Join(why, "; ") + ")"
	}
	return msg + ": " + ErrIncomplete.Error()
}

func (e *Incomplete) Unwrap() error { return ErrIncomplete }

// Strict answers as one index of every record does (List, Count, Summary,
// FingerprintSummary: what the API, the dashboard, the drains, the
// retention sweeper and the parked releases read), through a Querier, or
// not at all: an answer that would lack partitions is an *Incomplete
// error matching ErrIncomplete, never a short answer. Each call is bounded
// by Timeout (default 10s). Safe for concurrent use.
type Strict struct {
	Querier *Querier
	Timeout time.Duration
	// Views reads a record's view from the views bucket
	// (projection.GetView); WaitFor needs it.
	Views func(ctx context.Context, id string) (api.View, error)
}

func (s Strict) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cmpOr(s.Timeout, 10*time.Second))
}

// complete returns v, or the error of cov if it lacks partitions, or err.
func complete[T any](v T, cov Coverage, err error) (T, error) {
	var zero T
	switch {
	case err != nil:
		return zero, err
	case !cov.Complete():
		return zero, &Incomplete{cov}
	}
	return v, nil
}

// List returns the page of q over every partition. Errors: as
// Querier.List, and *Incomplete.
func (s Strict) List(q api.Query) (api.Page, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return complete(s.Querier.List(ctx, q))
}

// Count returns the records that match f over every partition. Errors: as
// Querier.Count, and *Incomplete.
func (s Strict) Count(f api.Filter) (int, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return complete(s.Querier.Count(ctx, f))
}

// Summary returns the summary of f over every partition, without its
// fingerprint groups (as an index's Summary). Errors: as Querier.Summary,
// and *Incomplete.
func (s Strict) Summary(f api.Filter) (api.Summary, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return complete(s.Querier.Summary(ctx, f))
}

// FingerprintSummary returns the fingerprint groups of f over every
// partition. Errors: as Summary.
func (s Strict) FingerprintSummary(f api.Filter) ([]api.FingerprintGroup, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return complete(s.Querier.FingerprintSummary(ctx, f))
}
