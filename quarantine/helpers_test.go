package quarantine_test

import "github.com/nats-io/nats.go/jetstream"

func jetstreamConfig(name, subject string) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage}
}
