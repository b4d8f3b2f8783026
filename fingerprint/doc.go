// Package fingerprint names a failure so that the same problem gets the
// same name across records: the failing function, the error code, the
// error message with its variable parts replaced, and the first stack
// frame inside the service's own module.
//
// Normalize replaces, in one pass: quoted values ("…", '…' after a
// non-word character, `…`, closed within 256 bytes) with <q>; UUIDs with
// <uuid>; timestamps, dates and clock times with <time>; 0x numbers and
// hexadecimal runs of 8 or more characters with a digit in them with <n>
// (the token of numbers: an id printed in hex may happen to hold only
// decimal digits); other tokens of 16 or more letters, digits, '_' or '-'
// with both a letter and a digit (NUIDs, base64 ids) with <id>; and the
// remaining numbers with <n>. E-mail addresses become <email>, and host
// names (two lower-case labels or more ending in a common generic or
// internal top-level domain, such as mx1.example.com:25 or
// db.orders.svc.cluster.local) become <host>; values in typographic quotes
// become <q> too. It collapses runs of white space. A message without
// any of these normalises as it did before they were replaced, so its
// fingerprint has not changed.
// So "order 42 not found (id 6f1c…)" and "order 7 not found (id 0b9e…)"
// both normalise to "order <n> not found (id <uuid>)".
//
// Frame returns the first function of a stack trace (Go's panic format or
// the %+v rendering of cockroachdb/errors) whose package is in the given
// module; the function without its line, so that a deploy that moves code
// keeps the fingerprint while a failure raised at another call site gets
// another one.
//
// Of combines the parts into "fp1-" and 16 hexadecimal digits of their
// SHA-256. The functions are pure and safe for concurrent use; inputs are
// cut to MaxInput bytes before they are read, so their cost is bounded.
package fingerprint
