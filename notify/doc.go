// Package notify delivers notifications of ExecutionFailed record events
// to webhooks: signed, behind an SSRF guard, de-duplicated, at least once.
//
// A Notifier is a durable JetStream consumer on the compensation stream
// (and one on the batch bucket's stream, for finished batches, and one on
// the circuits bucket's, for circuits that open, fail a probe or close:
// circuit_opened, circuit_probe_failed, circuit_closed, de-duplicated as
// the others, so a flapping circuit notifies once per window). For each
// record stream it derives notifications (created, prepared, applied,
// succeeded, recoverable_marked, function_changed, and retries_exhausted
// when a failure leaves no automatic retry), routes each by the config's
// rules (event type, processor, function, error code) to endpoints, and
// acknowledges the message only after every endpoint answered a success
// status, or the delivery was dropped by dedup, or its failure after the
// retry limit was recorded as an ExecutionFailed record of the notifier's
// own function (ProcessorName), which is never notified in turn.
//
// Signing: each request carries the headers Amends-Event-Id,
// Amends-Event-Type, Amends-Record-Id, Amends-Aggregate-Type,
// Amends-Aggregate-Id, Amends-Trace-Id, Amends-Timestamp (Unix seconds),
// Amends-Body-Sha256 (hex) and Amends-Signature: "sha256=<hex>" per active
// secret, comma-separated, the HMAC-SHA256 of SigningString (method, path,
// query, timestamp, event id and body hash, joined by newlines). Verify
// checks one. docs/notifications.md has the scheme with snippets.
//
// The Guard allows only http and https, resolves the host once, refuses
// the destination if any resolved address is loopback, private,
// link-local, CGNAT, ULA, multicast, unspecified or an IPv4-mapped form of
// them (unless the host name is on the allow-list), connects to the
// checked address, and follows no redirect. Short and numeric IPv4
// spellings ("127.1", "0x7f000001") and localhost names are read as the
// loopback they are, never looked up.
//
// De-duplication: a dedup key "<event type>:<function>:<record id>:<error
// code>" is claimed per endpoint in a KV bucket (DefaultDedupBucket); a
// second notification with the key within the window is dropped. The
// claim names the notification that holds it, so that notification is
// re-sent after a crash until it is marked delivered, and never again
// after. Digests count failures and successes per function × error code
// in a KV bucket (DefaultDigestBucket) and report them as new, still
// failing, resolved or regressed, at most once per interval.
package notify
