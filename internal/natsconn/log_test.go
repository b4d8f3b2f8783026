package natsconn

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlogLoggerLevels(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verbose bool
		log     func(*slogLogger)
		want    string // "" means nothing is logged
	}{
		{"notice quiet", false, func(l *slogLogger) { l.Noticef("up %d", 1) }, ""},
		{"notice verbose", true, func(l *slogLogger) { l.Noticef("up %d", 1) }, "level=INFO msg=\"up 1\""},
		{"warning", false, func(l *slogLogger) { l.Warnf("slow %s", "disk") }, "level=WARN msg=\"slow disk\""},
		{"error", false, func(l *slogLogger) { l.Errorf("bad") }, "level=ERROR msg=bad"},
		{"fatal", false, func(l *slogLogger) { l.Fatalf("no port") }, "level=ERROR msg=\"no port\" fatal=true"},
		{"debug", false, func(l *slogLogger) { l.Debugf("d") }, "level=DEBUG msg=d"},
		{"trace", false, func(l *slogLogger) { l.Tracef("t") }, "level=DEBUG msg=t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := slog.NewTextHandler(&buf, &slog.HandlerOptions{
				Level:       slog.LevelDebug,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
			})
			tc.log(newSlogLogger(slog.New(h), tc.verbose))
			if tc.want == "" {
				assert.Empty(t, buf.String())
				return
			}
			assert.Equal(t, tc.want+"\n", buf.String())
		})
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestSlogLoggerKeepsFirstFatal(t *testing.T) {
	l := newSlogLogger(nil, false)
	assert.Empty(t, l.firstFatal())
	l.Fatalf("listen %s: in use", "127.0.0.1:4222")
	l.Fatalf("second")
	assert.Equal(t, "listen 127.0.0.1:4222: in use", l.firstFatal())
}
