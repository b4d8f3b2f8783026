package main

import (
	"log/slog"
)

// defaultMaxHTTPConns is the most connections the automatic cap allows.
const defaultMaxHTTPConns = 4096

// fileLimits is the process's open-file limit (RLIMIT_NOFILE).
type fileLimits struct {
	soft, hard uint64
	// raised tells whether raiseFileLimit raised the soft limit.
	raised bool
	// known is false where the limit cannot be read.
	known bool
}

// httpConnCap returns the connection cap of the API: want if set, else
// half the soft limit (the other half stays for the NATS server, its store
// and the process), at most defaultMaxHTTPConns. An explicit want above
// half the limit is a usage error naming --http-max-connections.
func httpConnCap(want int, lim fileLimits) (int, error) {
	half := uint64(defaultMaxHTTPConns)
	if lim.known {
		half = max(lim.soft/2, 1)
	}
	if want > 0 {
		if lim.known && uint64(want) > half {
			return 0, usageErrorf("--http-max-connections %d is over half the open-file limit of %d (RLIMIT_NOFILE): the NATS server and its store need the rest; lower it or raise the limit (ulimit -n)",
				want, lim.soft)
		}
		return want, nil
	}
	return int(min(half, defaultMaxHTTPConns)), nil
}

// logFileLimits says what the open-file limit is and what the API may use.
func logFileLimits(logger *slog.Logger, lim fileLimits, conns int) {
	if !lim.known {
		logger.Info("open-file limit unknown", "http_max_connections", conns)
		return
	}
	logger.Info("open-file limit", "soft", lim.soft, "hard", lim.hard, "raised_to_hard", lim.raised, "http_max_connections", conns)
}
