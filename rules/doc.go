// Package rules keeps the operators' rules on failures and matches them.
//
// A Rule matches failures either by fingerprint (aggregate.ErrorDetails'
// Fingerprint) or by function (context, processor, name) and error code,
// and acts on them:
//
//   - MARK_UNRECOVERABLE, MARK_RECOVERABLE: the record is created with that
//     classification (or, applied to existing records, MarkRecoverable);
//   - APPLY_RETRY_SPEC: the record is created with the rule's retry spec
//     (ApplyRetrySpec on existing records);
//   - WAIVE: the failure is recorded, UNRECOVERABLE with no automatic
//     retry (maxRetries 0), and the rule's reason goes with the record;
//   - HOLD_UNTIL_DEPLOY, park until deploy (ParkUntilDeploy; ParseAction
//     also takes PARK_UNTIL_DEPLOY): the record is parked, kept from
//     automatic retries until a new build of its function's processor
//     registers; the scheduler then releases the parked records, a canary
//     first and the rest in steps (package scheduler, the park release).
//     Parking is a match, not a command: every record the rule matches is
//     parked, whenever it was recorded. It is not the processor's ordering
//     holds.
//
// When both kinds of rule match, the fingerprint rule wins; among rules of
// one kind and key, the newest. A rule past its ExpiresAt or removed no
// longer matches.
//
// # Storage and matching
//
// Store keeps the rules in a JetStream KV bucket (DefaultBucket), one key
// per rule. Every change is audited on the rule (actor, reason, time), a
// removal included: a removed rule stays, marked, so its audit is kept.
// Watcher watches the bucket and keeps a Set, an immutable index of the
// live rules, that it swaps on every change: the recorder matches each
// failure against the Set in memory, two map look-ups whatever the number
// of rules, with no round trip to NATS. The Watcher counts the matches of
// each rule and adds them to the rule's Recorded count from time to time.
//
// # Applying a rule to existing records
//
// Apply (and Store.Apply, which also audits it) runs a rule's command on
// the unfinished records it matches now, as a batch: oldest failure first,
// paced, a dry run that decides without appending, and command ids derived
// from the rule, the request id and the record, so a run sent twice
// applies once.
//
// Store, Watcher and Set are safe for concurrent use.
package rules
