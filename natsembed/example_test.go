package natsembed_test

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/natsembed"
)

// A single-binary service starts its own NATS server with JetStream and
// connects to it.
func Example() {
	dir, err := os.MkdirTemp("", "natsembed-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	srv, err := natsembed.Start(ctx, natsembed.Config{DataDir: dir, Port: natsembed.RandomPort})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	info, err := js.AccountInfo(ctx)
	fmt.Println(err, info.Streams)
	// Output: <nil> 0
}
