package server

import (
	"strings"
	"testing"

	"github.com/amends-dev/amends/eventstore"
)

// The server refuses exactly the record ids the event store refuses, so a
// valid id never fails later in NATS and no id the store takes is refused.
func FuzzCheckIDAgreesWithTheStore(f *testing.F) {
	for _, s := range []string{"", "a", "a.b*>", "é", "\x00", "\t", "\x7f", "\u0085", "\xff", strings.Repeat("a", 256), strings.Repeat("a", 257), strings.Repeat("é", 128) + "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		server := checkID("id", id) == nil
		store := eventstore.ValidateID("id", id) == nil
		if server != store {
			t.Fatalf("id %q: the server accepts it: %v, the store: %v", id, server, store)
		}
	})
}
