// Package natsconn gives amends its NATS connection: either an embedded
// nats-server with JetStream running inside the process (StartEmbedded), the
// default that needs nothing else installed, or a client connection to an
// existing server or cluster (Connect) with credentials, an NKey and TLS.
//
// # Embedded server
//
// StartEmbedded starts the server synchronously on a data directory and a
// TCP client listener, and returns once it accepts connections. Clients in
// the same process connect over TCP loopback (Embedded.Connect) rather than
// through an in-process pipe, which serialises concurrent callers. The
// server logs through log/slog; by default only its warnings and errors.
// It holds an exclusive lock on its data directory (LockFileName, holding
// the pid) while it runs, so two servers never share one JetStream store.
// LoopbackPorts finds the route ports of a cluster of embedded servers
// (the bench's, the tests'), below the ephemeral port range.
//
// # Durability
//
// By default the file store acknowledges a write before it reaches the
// disk and fsyncs every 2 minutes, so a machine crash (not a process crash)
// can lose the last acknowledged writes of a single-replica stream.
// EmbeddedConfig.SyncAlways fsyncs every write instead, at a large cost in
// append rate (about 3 k appends/s on a 2-core machine) and without
// pipelining. A stream replicated to three servers is what keeps an
// acknowledged write through the loss of a machine.
//
// # External servers
//
// Connect checks every file it is given before dialling, so a wrong path is
// reported with the setting that holds it, then connects and keeps
// reconnecting forever after the first connection succeeds.
package natsconn
