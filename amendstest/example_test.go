package amendstest_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/amendstest"
)

func TestJetStream(t *testing.T) {
	js := amendstest.JetStream(t)
	_, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(t.Context(), "t.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestServerRestartKeepsStreams(t *testing.T) {
	srv := amendstest.NewServer(t)
	_, js := srv.Connect()
	_, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	_, js = srv.Connect()
	if _, err := js.Stream(t.Context(), "T"); err != nil {
		t.Fatalf("the stream did not survive the restart: %v", err)
	}
}

// A service's test starts its own JetStream; the server and the
// connection end with the test.
func ExampleJetStream() {
	// func TestBilling(t *testing.T) {
	var t testing.TB // the test's *testing.T
	js := amendstest.JetStream(t)
	_ = js // wire the service on js, e.g. amends.New(js, "billing")
	// }
}
