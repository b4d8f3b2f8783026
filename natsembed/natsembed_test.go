package natsembed_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/natsembed"
)

func TestStartRefusesASecondServerOnTheDataDir(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsembed.Start(t.Context(), natsembed.Config{DataDir: dir, Port: natsembed.RandomPort})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	assert.Contains(t, srv.ClientURL(), "nats://127.0.0.1:")
	_, err = natsembed.Start(t.Context(), natsembed.Config{DataDir: dir, Port: natsembed.RandomPort})
	require.ErrorIs(t, err, natsembed.ErrDataDirLocked)

	_, err = natsembed.Start(context.Background(), natsembed.Config{})
	require.ErrorIs(t, err, natsembed.ErrInvalidConfig)
	assert.Equal(t, "data directory is empty: set the directory JetStream stores its data in", err.Error())
}
