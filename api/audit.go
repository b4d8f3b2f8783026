package api

import (
	"net/url"
	"strconv"
)

// AuditKind is what an audit entry records. The values are stable.
type AuditKind string

// The kinds of audit entries.
const (
	// AuditAuthFailure: a request presented a credential the server
	// refused (unknown, expired or revoked token, a JWT that does not
	// verify, an unknown session, a failed sign-in); Reason says which.
	AuditAuthFailure AuditKind = "auth_failure"
	// AuditRateLimited: a client went over its budget of failed
	// authentications; its requests are refused for a while.
	AuditRateLimited AuditKind = "rate_limited"
	// AuditSignIn and AuditSignOut: a dashboard session began or ended.
	AuditSignIn  AuditKind = "sign_in"
	AuditSignOut AuditKind = "sign_out"
	// AuditEventRead: a principal read the original event (the payload)
	// of a record.
	AuditEventRead AuditKind = "event_read"
	// AuditRetention: a retention sweep removed finished records (Actor
	// "scheduler"); Reason gives the counts and the archive.
	AuditRetention AuditKind = "retention_sweep"
	// AuditUnaudited: a stored value that would change behaviour (a
	// forced circuit, a rule) was written past amends, without the actor
	// amends writes with every such change; it is refused. Route is the
	// NATS subject it was written to, Reason its revision and why.
	AuditUnaudited AuditKind = "unaudited_value"
	// AuditArchiveRestore: an operator restored archived records through
	// the API (POST /api/v1/archive/{sweep}/restore); Reason gives the
	// operator's reason, the sweep and the outcomes' counts.
	AuditArchiveRestore AuditKind = "archive_restore"
)

// AuditKinds lists every kind.
var AuditKinds = []AuditKind{AuditAuthFailure, AuditRateLimited, AuditSignIn, AuditSignOut, AuditEventRead, AuditRetention, AuditUnaudited, AuditArchiveRestore}

// AuditCredential is the kind of credential an audit entry's actor
// presented. The values are stable.
type AuditCredential string

// The kinds of credentials.
const (
	// CredentialToken: an amends bearer token (a token's name is the
	// actor; it never holds a ':').
	CredentialToken AuditCredential = "token"
	// CredentialOIDC: a JWT or ID token of the OIDC issuer (its actor is
	// "ISSUER#SUB" or "oidc:NAME").
	CredentialOIDC AuditCredential = "oidc"
	// CredentialLocal: none, on a server without tokens (loopback only);
	// the actor is "local".
	CredentialLocal AuditCredential = "local"
	// CredentialSession: a dashboard session's cookie, whose credential
	// is unknown (a refused cookie).
	CredentialSession AuditCredential = "session"
	// CredentialSessionToken, CredentialSessionOIDC and
	// CredentialSessionLocal: a dashboard session made from a token, the
	// issuer or the local mode.
	CredentialSessionToken AuditCredential = "session:token"
	CredentialSessionOIDC  AuditCredential = "session:oidc"
	CredentialSessionLocal AuditCredential = "session:local"
	// CredentialSystem: nobody; amends recorded the entry itself (a
	// retention sweep, a value written past it).
	CredentialSystem AuditCredential = "system"
)

// AuditCredentials lists every kind of credential.
var AuditCredentials = []AuditCredential{CredentialToken, CredentialOIDC, CredentialLocal, CredentialSession,
	CredentialSessionToken, CredentialSessionOIDC, CredentialSessionLocal, CredentialSystem}

// AuditEntry is one entry of the audit log (GET /api/v1/audit).
type AuditEntry struct {
	// Seq is the entry's sequence in the audit stream, its cursor.
	Seq uint64 `json:"seq,omitempty"`
	// Time is when it happened, epoch ms.
	Time int64     `json:"time"`
	Kind AuditKind `json:"kind"`
	// Actor is the principal's name ("" when nobody authenticated) and
	// Role its role.
	Actor string `json:"actor,omitempty"`
	Role  string `json:"role,omitempty"`
	// Credential is the kind of credential the actor presented (for a
	// failed authentication, the one refused); entries of amends itself
	// have CredentialSystem. Entries recorded before it was kept lack it.
	Credential AuditCredential `json:"credential,omitempty"`
	// Client is the client's address, as the server saw it or a trusted
	// proxy forwarded it.
	Client string `json:"client,omitempty"`
	// Method and Route are the request's method and route pattern.
	Method string `json:"method,omitempty"`
	Route  string `json:"route,omitempty"`
	// Record and Event are the record and the original event read.
	Record string `json:"record,omitempty"`
	Event  string `json:"event,omitempty"`
	// Reason says why an authentication failed, or how a session began.
	Reason string `json:"reason,omitempty"`
}

// AuditQuery is a request of GET /api/v1/audit; empty fields match every
// entry.
type AuditQuery struct {
	Kind   AuditKind
	Actor  string
	Record string
	// From and To (epoch ms, inclusive) bound the entries' times.
	From, To int64
	// Cursor continues after the page that returned it (AuditPage.Next).
	Cursor string
	// Limit is the page size: 0 means the server's default (100), at most
	// 1000.
	Limit int
}

// Values returns q as the query parameters of GET /api/v1/audit.
func (q AuditQuery) Values() url.Values {
	v := url.Values{}
	for _, p := range []struct{ k, v string }{{"kind", string(q.Kind)}, {"actor", q.Actor}, {"record", q.Record}, {"cursor", q.Cursor}} {
		if p.v != "" {
			v.Set(p.k, p.v)
		}
	}
	for _, p := range []struct {
		k string
		n int64
	}{{"from", q.From}, {"to", q.To}, {"limit", int64(q.Limit)}} {
		if p.n != 0 {
			v.Set(p.k, strconv.FormatInt(p.n, 10))
		}
	}
	return v
}

// AuditPage is the body of GET /api/v1/audit: entries oldest first, the
// cursor of the next page, and how many stored messages of the page's
// range were skipped because they do not decode.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	Next    string       `json:"next,omitempty"`
	Skipped int          `json:"skipped,omitempty"`
}
