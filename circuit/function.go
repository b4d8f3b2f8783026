package circuit

import (
	"fmt"
	"strings"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// Function identifies the function a circuit guards: (context, processor,
// name), the identity of a record's function without its kind. Its
// String, CONTEXT.PROCESSOR.NAME, is the circuit's key in the bucket and
// how operators name it.
type Function struct {
	Context   string `json:"context"`
	Processor string `json:"processor"`
	Name      string `json:"name"`
}

// Of returns the function of f.
func Of(f aggregate.FunctionInfo) Function {
	return Function{Context: f.ContextName, Processor: f.ProcessorName, Name: f.Name}
}

// String returns CONTEXT.PROCESSOR.NAME.
func (f Function) String() string { return f.Context + "." + f.Processor + "." + f.Name }

// Label returns PROCESSOR.NAME, the function label of amends' metrics.
func (f Function) Label() string { return f.Processor + "." + f.Name }

// Validate checks that each part is a valid name (1 to 64 characters of
// [A-Za-z0-9_-]); the error matches ErrInvalidFunction and names the part.
func (f Function) Validate() error {
	for _, p := range []struct{ field, v string }{{"context", f.Context}, {"processor", f.Processor}, {"name", f.Name}} {
		if err := eventstore.ValidateName(p.field, p.v); err != nil {
			return fmt.Errorf("function %s: %s: %w", f, reason(err), ErrInvalidFunction)
		}
	}
	return nil
}

// ParseFunction reads CONTEXT.PROCESSOR.NAME. An error matches
// ErrInvalidFunction and says what is wrong.
func ParseFunction(s string) (Function, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Function{}, fmt.Errorf("function %.80q must be CONTEXT.PROCESSOR.NAME, three names separated by dots: %w", s, ErrInvalidFunction)
	}
	f := Function{Context: parts[0], Processor: parts[1], Name: parts[2]}
	return f, f.Validate()
}

// reason returns err's message without eventstore's sentinel.
func reason(err error) string {
	return strings.TrimSuffix(strings.TrimSuffix(err.Error(), ": "+eventstore.ErrInvalid.Error()), ".")
}
