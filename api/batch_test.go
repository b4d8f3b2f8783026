package api_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

func TestOutcomeOfACommandsResult(t *testing.T) {
	refused := &aggregate.Error{Kind: aggregate.ErrIllegalState, Message: "record r-1 is SUCCEEDED"}
	for _, c := range []struct {
		name string
		res  aggregate.Result
		err  error
		want api.BatchOutcome
		ok   bool
	}{
		{"applied", aggregate.Result{Version: 3}, nil, api.BatchOutcome{ID: "r-1", Outcome: api.OutcomeApplied, Version: 3}, true},
		{"duplicate", aggregate.Result{Version: 2, Duplicate: true}, nil, api.BatchOutcome{ID: "r-1", Outcome: api.OutcomeDuplicate, Version: 2}, true},
		{"rejected, wrapped", aggregate.Result{}, fmt.Errorf("prepare: %w", refused),
			api.BatchOutcome{ID: "r-1", Outcome: api.OutcomeRejected, Code: "IllegalState", Message: "record r-1 is SUCCEEDED"}, true},
		{"unavailable", aggregate.Result{}, errors.New("nats: timeout"), api.BatchOutcome{ID: "r-1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := api.OutcomeOf("r-1", c.res, c.err)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
		})
	}
}
