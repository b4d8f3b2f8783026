// Package e2e holds end-to-end tests that run every part of amends
// together on a real JetStream: a service's processor and recorder, the
// projection, the scheduler and the command service. It has no code of its
// own.
package e2e
