package processor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// A nil store is refused whether it is a nil interface or a nil
// *jsstore.Store in one: New takes the eventstore contract.
func TestNewRejectsANilStore(t *testing.T) {
	e := newEnv(t)
	_, err := processor.New(e.js, nil, ctxName)
	assert.ErrorIs(t, err, processor.ErrInvalidOption, "a nil interface")
	var none *jsstore.Store
	_, err = processor.New(e.js, none, ctxName)
	assert.ErrorIs(t, err, processor.ErrInvalidOption, "a nil *jsstore.Store")
	_, err = processor.New(nil, e.store, ctxName)
	assert.ErrorIs(t, err, processor.ErrInvalidOption, "a nil JetStream")
}
