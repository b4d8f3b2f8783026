package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
	"github.com/amends-dev/amends/quarantine"
)

// unauditedSightings writes to the audit log the first sighting of each
// stored value refused because it would change behaviour without the
// actor amends writes with every such change (quarantine.WithUnaudited):
// a forced circuit without its operator, a rule without the audit entry of
// its creation. The quarantine reports each revision once per process.
type unauditedSightings struct {
	log    atomic.Pointer[audit.Log] // set once the audit stream is open
	logger *slog.Logger
}

func (u *unauditedSightings) record(ctx context.Context, e quarantine.Entry) {
	l := u.log.Load()
	if l == nil {
		u.logger.Warn("a value written past amends was refused before the audit log opened; it is in the quarantine", "subject", e.Subject, "revision", e.Seq)
		return
	}
	err := l.Record(ctx, api.AuditEntry{Kind: api.AuditUnaudited, Credential: api.CredentialSystem, Route: e.Subject, Reason: fmt.Sprintf("revision %d: %s", e.Seq, e.Error)})
	if err != nil {
		u.logger.Warn("cannot write the sighting of a value written past amends to the audit log; it is in the quarantine", "subject", e.Subject, "err", err)
	}
}
