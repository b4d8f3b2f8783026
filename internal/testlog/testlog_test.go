package testlog_test

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/amends-dev/amends/internal/testlog"
)

// A Buffer is written by loggers on several goroutines while it is read,
// and finds the lines by their parts.
func TestBufferFindsTheLinesWrittenAtOnce(t *testing.T) {
	var logs testlog.Buffer
	log := logs.Logger(slog.LevelDebug)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			log.Debug("written", "writer", i)
			_ = logs.String()
		})
	}
	wg.Wait()
	log.Info("the last", "note", "longer than the others")
	assert.Len(t, logs.Lines("level=DEBUG", "written"), 8)
	assert.Len(t, logs.Lines("writer=3"), 1)
	assert.Empty(t, logs.Lines("level=DEBUG", "the last"))
	assert.Equal(t, 9, logs.Count("msg="))
	assert.Equal(t, len(logs.Lines("the last")[0]), logs.Longest())
	var quiet testlog.Buffer
	quiet.Logger(slog.LevelWarn).Info("not written")
	assert.Empty(t, quiet.String())
}
