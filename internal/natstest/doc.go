// Package natstest starts real NATS servers with JetStream for tests: one
// in-process server per test (no listener, an in-process connection), or a
// three-node cluster on loopback for replicated streams. Each server stores
// its data in the test's temporary directory and is shut down by the test's
// cleanup. Nothing here is a mock.
package natstest
