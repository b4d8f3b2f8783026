package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// kvFinder finds the quarantine's entry of a bucket's invalid entry.
// *quarantine.Quarantine satisfies it.
type kvFinder interface {
	FindKV(ctx context.Context, bucket, key string, revision uint64) (quarantine.Entry, bool, error)
}

func (s *Server) repairRoutes() []route {
	return []route{
		{method: "POST", pattern: "/api/v1/repair/skip-message", role: RoleOperator, handler: s.skipMessage},
		{method: "POST", pattern: "/api/v1/repair/purge-entry", role: RoleOperator, handler: s.purgeEntry},
	}
}

// repairStore is the event store repairs act on.
func (s *Server) repairStore() (*Ordering, error) {
	o := s.cfg.Ordering
	if o == nil || o.Store == nil || o.JS == nil {
		return nil, notConfigured("this server has no event store to repair")
	}
	return o, nil
}

// skipMessage is POST /api/v1/repair/skip-message: an operator approves a
// message of an event store stream that loaders pass over (jsstore.Skip),
// audited with the caller and the reason; a dry run shows the plan.
func (s *Server) skipMessage(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	req, err := readJSON[api.SkipMessageRequest](s, w, r, "the body of a skip")
	if err != nil {
		return err
	}
	reason, err := checkReason("a skip", true, &req.Reason) // required: a skip is audited
	if err != nil {
		return err
	}
	if ae := checkText("stream", req.Stream, 256); ae != nil {
		return ae
	}
	if req.Stream == "" || req.Seq == 0 {
		return badRequest("stream", "a skip names the message: its stream and sequence (seq from 1), as amends quarantine list prints them")
	}
	o, err := s.repairStore()
	if err != nil {
		return err
	}
	var plan jsstore.SkipPlan
	if req.DryRun {
		plan, err = o.Store.PlanSkip(r.Context(), req.Stream, req.Seq)
	} else {
		plan, err = o.Store.Skip(r.Context(), req.Stream, req.Seq, p.name, reason, s.cfg.Clock.Now())
	}
	switch {
	case errors.Is(err, jsstore.ErrNotCorrupt):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "NotCorrupt", Message: err.Error()}}
	case errors.Is(err, eventstore.ErrNotFound):
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound", Message: err.Error()}}
	case errors.Is(err, eventstore.ErrInvalid):
		return badRequest("stream", "%s", strings.TrimSuffix(err.Error(), ": "+eventstore.ErrInvalid.Error()))
	case err != nil:
		return err
	}
	if !req.DryRun {
		s.log.Warn("repair: message skipped by loaders", "actor", p.name, "reason", reason, "stream", plan.Stream, "seq", plan.Seq, "subject", plan.Subject, "prev", plan.Prev)
	}
	writeJSON(w, http.StatusOK, api.SkipMessagePlan{Stream: plan.Stream, Seq: plan.Seq, Subject: plan.Subject, Problem: plan.Problem, Size: plan.Size,
		Prev: plan.Prev, Version: plan.Version, Skipped: plan.Skipped, DryRun: req.DryRun, Actor: plan.Actor, Reason: plan.Reason, At: plan.At})
	return nil
}

// purgeEntry is POST /api/v1/repair/purge-entry: an operator removes an
// entry of a KV bucket that the quarantine lists as invalid, if the key is
// still at that revision (a valid entry, or one written since, is never
// purged). It is logged with the caller and the reason; a dry run shows
// the quarantine's entry.
func (s *Server) purgeEntry(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	req, err := readJSON[api.PurgeEntryRequest](s, w, r, "the body of a purge")
	if err != nil {
		return err
	}
	reason, err := checkReason("a purge", true, &req.Reason)
	if err != nil {
		return err
	}
	if err := checkPurgeRequest(&req); err != nil {
		return err
	}
	o, err := s.repairStore()
	if err != nil {
		return err
	}
	finder, ok := s.cfg.Quarantine.(kvFinder)
	if !ok {
		return notConfigured("this server has no quarantine to check the entry against")
	}
	entry, ok, err := finder.FindKV(r.Context(), req.Bucket, req.Key, req.Revision)
	if err != nil {
		return err
	}
	if !ok {
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound", Message: fmt.Sprintf(
			"the quarantine lists no invalid entry %s of bucket %s at revision %d; only an entry it lists can be purged (amends quarantine list)", kvstore.QuoteKey(req.Key), req.Bucket, req.Revision)}}
	}
	kv, err := o.JS.KeyValue(r.Context(), req.Bucket)
	if err != nil {
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound", Message: fmt.Sprintf("bucket %s: %v", req.Bucket, err)}}
	}
	stream, err := o.JS.Stream(r.Context(), "KV_"+req.Bucket)
	if err != nil {
		return err
	}
	if err := unchangedSince(r.Context(), stream, req); err != nil {
		return err
	}
	plan := api.PurgeEntryPlan{Entry: quarantineEntry(entry), DryRun: req.DryRun}
	if !req.DryRun {
		if err := kvstore.Bind(o.JS, kv, kvstore.Spec{}).PurgeRaw(r.Context(), req.Key); err != nil {
			return err
		}
		plan.Purged = true
		s.log.Warn("repair: invalid KV entry purged", "actor", p.name, "reason", reason, "bucket", req.Bucket, "key", kvstore.QuoteKey(req.Key), "revision", req.Revision)
	}
	writeJSON(w, http.StatusOK, plan)
	return nil
}

// checkPurgeRequest checks a purge's bucket, key and revision.
func checkPurgeRequest(req *api.PurgeEntryRequest) error {
	switch {
	case req.Bucket == "" || len(req.Bucket) > 256 || strings.ContainsAny(req.Bucket, ". *>\t\r\n"):
		return badRequest("bucket", "bucket must be a bucket name of 1 to 256 characters without dots, spaces or wildcards")
	case req.Key == "" || len(req.Key) > kvstore.MaxKeyBytes || strings.ContainsAny(req.Key, " *>\t\r\n"):
		return badRequest("key", "key must be 1 to %d bytes without spaces or wildcards, as amends quarantine list prints it", kvstore.MaxKeyBytes)
	case req.Revision == 0:
		return badRequest("revision", "revision must be the entry's revision (from 1), as amends quarantine list prints it (SEQ)")
	}
	return nil
}

// unchangedSince refuses a purge of a key that is gone or changed since
// the quarantined revision.
func unchangedSince(ctx context.Context, stream jetstream.Stream, req api.PurgeEntryRequest) error {
	last, err := stream.GetLastMsgForSubject(ctx, "$KV."+req.Bucket+"."+req.Key)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "Changed", Message: "the entry is gone already"}}
	case err != nil:
		return err
	case last.Sequence != req.Revision || last.Header.Get("KV-Operation") != "":
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "Changed", Message: fmt.Sprintf(
			"the key is at revision %d now, not %d: it changed since it was quarantined, so it is not purged", last.Sequence, req.Revision)}}
	}
	return nil
}
