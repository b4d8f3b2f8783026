package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/kvstore"
)

// DefaultSessionBucket is the KV bucket of the dashboard's sessions.
const DefaultSessionBucket = "amends_sessions"

// Limits of the session bucket.
const (
	// maxSessionValue bounds a stored session.
	maxSessionValue = 1024
	// maxSubjectBytes bounds an OIDC principal's issuer and subject.
	maxSubjectBytes = 512
)

// SessionSpec is the session bucket: entries kept SessionTTL (its TTL
// must match), at most 1 KiB each; its content may be lost (everyone signs
// in again), so Repair may recreate it.
func SessionSpec(replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket:       DefaultSessionBucket,
		Description:  "amends: dashboard sessions by the SHA-256 of their ids (no secrets)",
		TTL:          SessionTTL,
		Replicas:     max(replicas, 1),
		History:      1,
		MaxValueSize: maxSessionValue,
	}, MaxValue: maxSessionValue, Disposable: true, Match: []kvstore.Setting{kvstore.SettingTTL}}
}

// OpenSessions returns the bucket of dashboard sessions, creating it with
// the given replicas if missing (and bringing its TTL to SessionTTL). Every
// server of a deployment shares it, so a session works on each and
// survives a restart. An entry is kept for SessionTTL, a value is at most
// 1 KiB, and a server refuses sign-ins beyond MaxSessions (never dropping
// another principal's session), so the bucket stays within MaxSessions KiB
// per server without a byte limit that the account's storage would have to
// reserve. Keys are the SHA-256 of session ids, values the principal's
// name, role, how it signed in and the session's times: no secret.
func OpenSessions(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	spec := SessionSpec(replicas)
	if _, err := kvstore.Repair(ctx, js, spec, false); err != nil {
		return nil, fmt.Errorf("open the session bucket %s: %w", DefaultSessionBucket, err)
	}
	b, err := kvstore.Open(ctx, js, spec)
	if err != nil {
		return nil, fmt.Errorf("open the session bucket %s: %w", DefaultSessionBucket, err)
	}
	return b.KV(), nil
}

// storedSession is a session's value in the bucket.
type storedSession struct {
	// V is the version of the shape: 1.
	V       int    `json:"v"`
	Name    string `json:"name"`
	Role    Role   `json:"role"`
	Via     string `json:"via"`
	Subject string `json:"subject,omitempty"`
	// Created and Expires are epoch ms.
	Created int64 `json:"created"`
	Expires int64 `json:"expires"`
}

// sessionStore reads and writes sessions in the bucket, through the KV
// layer: an entry that does not validate is quarantined and counts as no
// session. Safe for concurrent use.
type sessionStore struct {
	st  *kvstore.Store[*session]
	log *slog.Logger
}

var sessionCodec = kvstore.Codec[*session]{
	Decode: func(e kvstore.Entry) (*session, error) { return decodeSession(e.Key, e.Value) },
	Encode: func(s *session) ([]byte, error) {
		return jsonv2.Marshal(storedSession{V: 1, Name: s.name, Role: s.role, Via: s.via, Subject: s.subject,
			Created: s.created.UnixMilli(), Expires: s.expires.UnixMilli()})
	},
}

// storeTimeout bounds one request of the store on a request's path.
const storeTimeout = 5 * time.Second

func (st *sessionStore) put(ctx context.Context, key string, s *session) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if _, err := st.st.Create(ctx, key, s); err != nil {
		if errors.Is(err, kvstore.ErrConflict) {
			return fmt.Errorf("store session: a session with this id exists: %w", err)
		}
		return fmt.Errorf("store session: %w", err)
	}
	return nil
}

// get reads the session of key; an entry that does not validate is
// quarantined and treated as no session.
func (st *sessionStore) get(ctx context.Context, key string) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	s, _, err := st.st.Get(ctx, key)
	return s, err
}

// delete ends a session in the bucket; a failure is logged (the entry
// expires with the bucket's TTL, and this server has ended it already).
func (st *sessionStore) delete(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := st.st.Delete(ctx, key, 0); err != nil {
		st.log.Warn("session bucket: could not delete an ended session; other servers end it when it expires", "key", key, "err", err)
	}
}

// decodeSession reads a stored session and checks every field: the key is
// "s_" and 64 hex digits, the value at most maxSessionValue bytes of the
// shape of version 1 (exact names, nothing else), the name 1 to
// MaxParamBytes of printable text, the role viewer or operator, via one of
// token, oidc (with a subject) or local (the local operator), the
// subject printable and at most maxSubjectBytes, and the times a span of
// at most SessionTTL.
func decodeSession(key string, data []byte) (*session, error) {
	h, ok := strings.CutPrefix(key, "s_")
	if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != 32 {
		return nil, kvstore.Invalid("key", "is not s_ and 64 hex digits")
	}
	if len(data) > maxSessionValue {
		return nil, kvstore.Invalid("", "value of %d bytes, over %d", len(data), maxSessionValue)
	}
	var v storedSession
	if err := jsonv2.Unmarshal(bytes.TrimSpace(data), &v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, kvstore.Invalid("", "not a session in JSON: %v", err)
	}
	if err := v.check(); err != nil {
		return nil, err
	}
	return &session{principal: principal{name: v.Name, role: v.Role, via: v.Via, subject: v.Subject},
		created: time.UnixMilli(v.Created), expires: time.UnixMilli(v.Expires)}, nil
}

// watch applies the bucket's entries, the present ones first, to ss until
// ctx ends, restarting a watch that fails after a capped backoff. A bad
// entry is logged and skipped: it signs nobody in.
func (st *sessionStore) watch(ctx context.Context, ss *sessions) {
	wait.Restart(ctx, 100*time.Millisecond, 10*time.Second, func(ctx context.Context) error { return st.watchOnce(ctx, ss) },
		func(err error, _ int, backoff time.Duration) bool {
			st.log.Warn("session bucket: the watch stopped; restarting it", "err", err, "backoff", backoff)
			return true
		})
}

func (st *sessionStore) watchOnce(ctx context.Context, ss *sessions) error {
	w, err := st.st.KV().WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	return kvwatch.Follow(ctx, w, func(e jetstream.KeyValueEntry) {
		if e.Operation() != jetstream.KeyValuePut {
			ss.apply(e.Key(), nil)
			return
		}
		if s, err := st.st.DecodeEntry(ctx, e); err == nil { // else quarantined: it signs nobody in
			ss.apply(e.Key(), s)
		}
	})
}

// check checks a stored session: its version, who it signs in and how,
// and its span.
func (v *storedSession) check() error {
	if v.V != 1 {
		return kvstore.Invalid("v", "version %d, want 1", v.V)
	}
	if err := v.checkPrincipal(); err != nil {
		return err
	}
	if v.Created <= 0 || v.Expires <= v.Created || v.Expires-v.Created > SessionTTL.Milliseconds() {
		return kvstore.Invalid("expires", "times created %d and expires %d are not a span of at most %s", v.Created, v.Expires, SessionTTL)
	}
	return nil
}

// checkPrincipal checks who a stored session signs in: name, role, how
// (via) and, for OIDC, the subject.
func (v *storedSession) checkPrincipal() error {
	switch {
	case v.Name == "" || checkText("name", v.Name, MaxParamBytes) != nil || strings.ContainsFunc(v.Name, refusedInText):
		return kvstore.Invalid("name", "is not 1 to %d bytes of printable text", MaxParamBytes)
	case v.Role != RoleViewer && v.Role != RoleOperator:
		return kvstore.Invalid("role", "%q is neither viewer nor operator", cutText(string(v.Role), 20))
	case !slices.Contains([]string{viaToken, viaOIDC, viaLocal}, v.Via):
		return kvstore.Invalid("via", "%q is not token, oidc or local", cutText(v.Via, 20))
	case (v.Via == viaOIDC) == (v.Subject == ""):
		return kvstore.Invalid("subject", "is given where it is not, or missing where it is, due")
	case len(v.Subject) > maxSubjectBytes || checkText("subject", v.Subject, maxSubjectBytes) != nil:
		return kvstore.Invalid("subject", "is not up to %d bytes of printable text", maxSubjectBytes)
	case v.Via == viaLocal && (v.Name != LocalActor || v.Role != RoleOperator):
		return kvstore.Invalid("via", "a local session is not the local operator")
	}
	return nil
}
