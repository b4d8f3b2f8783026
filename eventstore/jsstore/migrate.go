package jsstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Migration is what MigrateRemovable did.
type Migration struct {
	// Stream is the stream; Migrated is false if it allowed purges
	// already (nothing was done).
	Stream   string
	Migrated bool
	// Messages and LastSeq are the stream's, the same before and after.
	Messages, LastSeq uint64
	// Backup is the snapshot file the stream was restored from, kept in
	// the backup directory (with Backup+".json", its configuration and
	// state) for a manual restore if anything went wrong.
	Backup string
	Bytes  int64
}

// migrateChunk is the chunk size of snapshots and restores.
const migrateChunk = 128 << 10

// MigrateRemovable makes the existing stream of context allow purges
// (see WithRemovable), which JetStream refuses to change on an update:
// it snapshots the stream with its consumers into a file in backupDir,
// deletes the stream, and restores the snapshot under the same
// configuration with DenyPurge cleared. The messages keep their
// sequences and the consumers their positions; DenyDelete stays.
//
// Nothing may write to the stream meanwhile: stop every serve and
// processor of the deployment first (an append while the stream is
// deleted fails; one during the snapshot would be lost). If the restore
// fails, the snapshot stays in backupDir; `nats stream restore` with the
// saved configuration brings the stream back. A stream that allows purges
// already is left alone. Errors wrap JetStream's, the file system's, or
// report a restored stream whose messages differ from the snapshot's.
func (s *Store) MigrateRemovable(ctx context.Context, context, backupDir string) (Migration, error) {
	name := s.StreamName(context)
	m := Migration{Stream: name}
	st, err := s.js.Stream(ctx, name)
	if err != nil {
		return m, fmt.Errorf("migrate stream %s: %w", name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return m, fmt.Errorf("migrate stream %s: %w", name, err)
	}
	if !info.Config.DenyPurge {
		return m, nil
	}
	if err := os.MkdirAll(backupDir, 0o700); err != nil {
		return m, fmt.Errorf("migrate stream %s: backup directory: %w", name, err)
	}
	m.Backup = filepath.Join(backupDir, fmt.Sprintf("%s-%s.tar.s2", name, time.Now().UTC().Format("20060102T150405Z")))
	state, n, err := s.snapshot(ctx, name, m.Backup)
	if err != nil {
		return m, fmt.Errorf("migrate stream %s: snapshot (the stream is untouched): %w", name, err)
	}
	m.Bytes, m.Messages, m.LastSeq = n, state.Msgs, state.LastSeq
	cfg := info.Config
	meta, _ := json.MarshalIndent(map[string]any{"config": cfg, "state": state}, "", "  ")
	if err := os.WriteFile(m.Backup+".json", meta, 0o600); err != nil {
		return m, fmt.Errorf("migrate stream %s: save its configuration (the stream is untouched): %w", name, err)
	}
	if err := s.js.DeleteStream(ctx, name); err != nil {
		return m, fmt.Errorf("migrate stream %s: delete it before the restore (the stream is untouched): %w", name, err)
	}
	cfg.DenyPurge = false
	restored, err := s.restore(ctx, cfg, state, m.Backup)
	if err != nil {
		return m, fmt.Errorf("migrate stream %s: restore from %s failed, the stream is deleted: restore it with nats stream restore and %s.json: %w", name, m.Backup, m.Backup, err)
	}
	if restored.Msgs != state.Msgs || restored.LastSeq != state.LastSeq || restored.FirstSeq != state.FirstSeq {
		return m, fmt.Errorf("migrate stream %s: restored %d messages %d..%d, the snapshot had %d messages %d..%d; the snapshot is %s",
			name, restored.Msgs, restored.FirstSeq, restored.LastSeq, state.Msgs, state.FirstSeq, state.LastSeq, m.Backup)
	}
	s.mu.Lock()
	delete(s.streams, context) // provisioned again with the new settings
	s.mu.Unlock()
	m.Migrated = true
	return m, nil
}

type apiResult struct {
	Error *jetstream.APIError `json:"error"`
}

// snapshot writes the stream's snapshot (messages and consumers, as the
// server sends it: an s2-compressed tar) to path.
func (s *Store) snapshot(ctx context.Context, name, path string) (jetstream.StreamState, int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return jetstream.StreamState{}, 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	inbox := s.nc.NewInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return jetstream.StreamState{}, 0, err
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "chunk_size": migrateChunk})
	resp, err := s.nc.RequestWithContext(ctx, s.opts.apiPrefix+"STREAM.SNAPSHOT."+name, req)
	if err != nil {
		return jetstream.StreamState{}, 0, err
	}
	var out struct {
		apiResult
		State *jetstream.StreamState `json:"state"`
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		return jetstream.StreamState{}, 0, fmt.Errorf("bad snapshot response: %w", err)
	}
	if out.Error != nil {
		return jetstream.StreamState{}, 0, out.Error
	}
	if out.State == nil {
		return jetstream.StreamState{}, 0, errors.New("the snapshot response has no state")
	}
	var n int64
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return jetstream.StreamState{}, 0, err
		}
		if len(msg.Data) == 0 {
			// The end: a status 204, or an error status.
			if code := msg.Header.Get("Status"); code != "" && code != "204" {
				return jetstream.StreamState{}, 0, fmt.Errorf("snapshot ended with status %s %s", code, msg.Header.Get("Description"))
			}
			break
		}
		if _, err := w.Write(msg.Data); err != nil {
			return jetstream.StreamState{}, 0, err
		}
		n += int64(len(msg.Data))
		if msg.Reply != "" {
			if err := s.nc.Publish(msg.Reply, nil); err != nil {
				return jetstream.StreamState{}, 0, err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return jetstream.StreamState{}, 0, err
	}
	if err := f.Sync(); err != nil {
		return jetstream.StreamState{}, 0, err
	}
	if n == 0 {
		return jetstream.StreamState{}, 0, errors.New("the snapshot is empty")
	}
	return *out.State, n, f.Close()
}

// restore creates the stream of cfg from the snapshot at path.
func (s *Store) restore(ctx context.Context, cfg jetstream.StreamConfig, state jetstream.StreamState, path string) (jetstream.StreamState, error) {
	f, err := os.Open(path)
	if err != nil {
		return jetstream.StreamState{}, err
	}
	defer f.Close()
	req, _ := json.Marshal(map[string]any{"config": cfg, "state": state})
	resp, err := s.nc.RequestWithContext(ctx, s.opts.apiPrefix+"STREAM.RESTORE."+cfg.Name, req)
	if err != nil {
		return jetstream.StreamState{}, err
	}
	var start struct {
		apiResult
		DeliverSubject string `json:"deliver_subject"`
	}
	if err := json.Unmarshal(resp.Data, &start); err != nil {
		return jetstream.StreamState{}, fmt.Errorf("bad restore response: %w", err)
	}
	if start.Error != nil {
		return jetstream.StreamState{}, start.Error
	}
	if start.DeliverSubject == "" {
		return jetstream.StreamState{}, errors.New("the restore response names no subject")
	}
	buf := make([]byte, migrateChunk)
	for {
		k, err := io.ReadFull(f, buf)
		if k > 0 {
			ack, rerr := s.nc.RequestWithContext(ctx, start.DeliverSubject, buf[:k])
			if rerr != nil {
				return jetstream.StreamState{}, rerr
			}
			if len(ack.Data) > 0 {
				var r apiResult
				if json.Unmarshal(ack.Data, &r) == nil && r.Error != nil {
					return jetstream.StreamState{}, r.Error
				}
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return jetstream.StreamState{}, err
		}
	}
	done, err := s.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: start.DeliverSubject})
	if err != nil {
		return jetstream.StreamState{}, err
	}
	var out struct {
		apiResult
		State *jetstream.StreamState `json:"state"`
	}
	if err := json.Unmarshal(done.Data, &out); err != nil {
		return jetstream.StreamState{}, fmt.Errorf("bad restore result: %w", err)
	}
	if out.Error != nil {
		return jetstream.StreamState{}, out.Error
	}
	if out.State == nil {
		return jetstream.StreamState{}, errors.New("the restore result has no state")
	}
	return *out.State, nil
}
