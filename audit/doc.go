// Package audit is the log of the security events of the amends control
// plane: failed authentications and the clients that went over their
// budget of them, sign-ins and sign-outs of the dashboard, and reads of
// original events (who looked at which payload, when, from where).
//
// The log is a JetStream stream (DefaultStream), one message per Entry on
// the subject "amends.audit.<kind>.<actor>", kept for a retention
// (DefaultMaxAge) and bounded in entries (DefaultMaxEntries); beyond either the oldest entries
// go. Every serve of a deployment writes to the same stream. Record writes
// one entry and returns once JetStream has stored it; Query reads pages of
// entries back, oldest first, by kind, actor, record and time, with a
// cursor, scanning a bounded number of messages per page.
//
// The stream is open to anyone who can publish on its subjects, so what is
// read back is validated: an entry that does not decode or breaks a limit
// is skipped and counted (Page.Skipped), never shown as if it were true.
package audit
