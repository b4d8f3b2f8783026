package aggregate

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// namespace is the UUIDv5 namespace of record ids. Changing it would give
// every failure a new record id: never change it.
var namespace = uuid.MustParse("0ea40363-d017-46b7-8da9-1f890bb5c2f9")

// RecordID returns the id of the record of event eventID failing in
// function f: a UUIDv5 of the event id and the function's context,
// processor and name (not its kind, which is how the function runs, not
// which function it is). Recording the same failure twice thus targets one
// record.
func RecordID(eventID string, f FunctionInfo) string {
	var b strings.Builder
	for _, part := range []string{eventID, f.ContextName, f.ProcessorName, f.Name} {
		// Length-prefixed, so no two different tuples give the same name.
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.WriteString(part)
	}
	return uuid.NewSHA1(namespace, []byte(b.String())).String()
}
