package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
)

// Limits of serve's flags. Each flag's help states its range; a value
// outside it is a usage error naming the flag before anything starts.
const (
	// minMaxMsgSize is the smallest --max-msg-size the event store takes.
	minMaxMsgSize = 1024
	// maxMaxMsgSize is the largest --max-msg-size: nats-server refuses a
	// max_payload above its max_pending of 64 MiB.
	maxMaxMsgSize = 64 << 20
	// maxSchedulerDuration bounds --scheduler-period, --scheduler-initial-delay
	// and --lease-ttl: longer values are mistakes (a unit left off) rather
	// than settings.
	maxSchedulerDuration = 24 * time.Hour
	// minLeaseTTL is the scheduler's smallest lease TTL: it renews every
	// third of the TTL and JetStream expires keys in whole seconds.
	minLeaseTTL = time.Second
	// maxSchedulerBatch is the most records one pass may prepare, as many as
	// one batch of the API.
	maxSchedulerBatch = 10000
	// maxSchedulerConcurrency is the most prepares sent at once.
	maxSchedulerConcurrency = 256
	// maxHTTPConnections bounds --http-max-connections.
	maxHTTPConnections = 1 << 20
)

// checkRange returns a usage error naming flag if v is outside [lo, hi].
func checkRange[T int | int32 | time.Duration](flag string, v, lo, hi T, unit string) error {
	if !bounds.Within(v, lo, hi) {
		return usageErrorf("--%s must be between %s and %s%s, got %s", flag, show(lo), show(hi), unit, show(v))
	}
	return nil
}

// show formats a limit: durations without trailing zero units ("24h", not
// "24h0m0s").
func show[T int | int32 | time.Duration](v T) string {
	d, ok := any(v).(time.Duration)
	if !ok {
		return fmt.Sprint(v)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseHostPort checks a host:port flag whose port may be 0 (a free port)
// and returns its host.
func parseHostPort(flag, addr, example string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err == nil {
		port, err = strconv.Atoi(p)
	}
	if err != nil || !bounds.Within(port, 0, 65535) {
		return "", 0, usageErrorf("--%s %q: want host:port with a port from 0 (a free port) to 65535, such as %s", flag, addr, example)
	}
	return host, port, nil
}

// isLoopback reports whether host only accepts connections from this
// machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHint says how to bind addr to loopback instead.
func loopbackHint(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		port = "PORT"
	}
	return fmt.Sprintf("127.0.0.1:%s", port)
}
