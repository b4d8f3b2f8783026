package natsconn

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

var _ server.Logger = (*slogLogger)(nil)

// slogLogger adapts a *slog.Logger to the nats-server Logger interface.
// Notices are logged at Info only when verbose is set; warnings at Warn;
// errors and fatal errors at Error; debug and trace lines at Debug (the
// server calls those only when its debug or trace flag is on). The first
// fatal message is kept: nats-server reports startup failures (a port in
// use, JetStream that cannot start) through Fatalf and expects the logger
// to end the process, which an embedding process must not do.
//
// It is safe for concurrent use.
type slogLogger struct {
	l       *slog.Logger
	verbose bool

	mu    sync.Mutex
	fatal string
}

func newSlogLogger(l *slog.Logger, verbose bool) *slogLogger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &slogLogger{l: l, verbose: verbose}
}

func (a *slogLogger) log(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	a.l.Log(ctx, level, fmt.Sprintf(format, v...))
}

// Noticef logs an informational server message when verbose is set.
func (a *slogLogger) Noticef(format string, v ...any) {
	if a.verbose {
		a.log(slog.LevelInfo, format, v)
	}
}

// Warnf logs a server warning.
func (a *slogLogger) Warnf(format string, v ...any) { a.log(slog.LevelWarn, format, v) }

// Errorf logs a server error.
func (a *slogLogger) Errorf(format string, v ...any) { a.log(slog.LevelError, format, v) }

// Fatalf logs a fatal server error at Error level and remembers the first
// one; it does not end the process.
func (a *slogLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	a.mu.Lock()
	if a.fatal == "" {
		a.fatal = msg
	}
	a.mu.Unlock()
	a.l.Error(msg, "fatal", true)
}

// Debugf logs a server debug line.
func (a *slogLogger) Debugf(format string, v ...any) { a.log(slog.LevelDebug, format, v) }

// Tracef logs a server protocol trace line at Debug level.
func (a *slogLogger) Tracef(format string, v ...any) { a.log(slog.LevelDebug, format, v) }

// firstFatal returns the first fatal message, or "" if there was none.
func (a *slogLogger) firstFatal() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fatal
}
