// Package dashboard is the browser UI of amends, served by `amends serve`
// at / next to the HTTP API (server.Config.Dashboard).
//
// The pages are static HTML, CSS and hand-written JavaScript embedded in
// the binary (no CDN, no fonts, no build step): the server minifies the
// scripts and styles once, when it first serves them, and sends every file
// gzip-compressed with an ETag; the pages name their assets with a version
// (?v=) so that a browser may keep them. A page draws its data in one go,
// once the data it needs has arrived, in boxes of reserved size, so that
// nothing moves under the reader's eyes (the browser tests measure the
// layout shift of every page). They read and steer records
// through the JSON API under /api/v1, exactly as the CLI does, so every
// rule of the API (roles, validation, the aggregate's refusals) holds in
// the browser too. The package adds only what the API lacks for a browser:
//
//   - live counts: a server-sent event stream (/ui/v1/live) of the six
//     views' counts and of the records that changed, fed by a watch of the
//     views bucket and computed from the index, never by polling records;
//   - the backlog trend (/ui/v1/backlog): due records and the oldest due
//     age, sampled once a minute from the index over the last hour;
//   - the original event of a record with its body, read from the event
//     store (/ui/v1/records/{id}/event);
//   - the computed schedule of a record's remaining retries, under its
//     retry spec or a proposed one (/ui/v1/records/{id}/schedule), with the
//     aggregate's retry formula;
//   - the operator commands the aggregate would accept on a record now,
//     and why the others would be refused (/ui/v1/records/{id}/actions),
//     so that the record page offers only what would be accepted.
//
// Authentication, sessions and CSRF checks are the server's (package
// server); the dashboard serves only what the server lets through, and
// sets a strict Content-Security-Policy on every page: scripts and styles
// from the server itself only, no inline code.
//
// The browser tests drive chromium; they write the screenshots in docs/
// with
//
//	go test ./dashboard/ -run Browser -update-screenshots
//
// See docs/dashboard.md.
package dashboard
