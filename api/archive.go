package api

import (
	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// ArchiveSweeps is the body of GET /api/v1/archive: every sweep the
// archive holds, oldest first.
type ArchiveSweeps struct {
	// Archive names the archive (dir:/path or objectstore:BUCKET).
	Archive string         `json:"archive"`
	Sweeps  []ArchiveSweep `json:"sweeps"`
}

// ArchiveSweep is what one sweep holds, read from its manifest; Error says
// why the manifest could not be read (the counts are then 0).
type ArchiveSweep struct {
	Sweep     uint64 `json:"sweep"`
	CreatedAt int64  `json:"createdAt"`
	Objects   int    `json:"objects"`
	Records   int    `json:"records"`
	Streams   int    `json:"streams"`
	Bytes     int    `json:"bytes"`
	Error     string `json:"error,omitempty"`
}

// ArchiveRecords is the body of GET /api/v1/archive/{sweep}: a page of the
// sweep's records in the manifest's order, Next continuing it (absent on
// the last page).
type ArchiveRecords struct {
	Sweep   uint64           `json:"sweep"`
	Records []ArchivedRecord `json:"records"`
	Next    string           `json:"next,omitempty"`
}

// ArchivedRecord is one archived record: its function, how many versions
// its history has, and the status and time of its last state.
type ArchivedRecord struct {
	ID        string                 `json:"id"`
	Function  aggregate.FunctionInfo `json:"function"`
	Versions  int                    `json:"versions"`
	Status    aggregate.Status       `json:"status,omitempty"`
	ExecuteAt int64                  `json:"executeAt,omitempty"`
	Object    string                 `json:"object"`
}

// ArchivedHistory is the body of GET /api/v1/archive/{sweep}/{id}: one
// archived record and its history, version 1 first.
type ArchivedHistory struct {
	Record  ArchivedRecord      `json:"record"`
	History []eventstore.Stream `json:"history"`
}

// ArchiveRestoreRequest is the body of POST /api/v1/archive/{sweep}/restore.
// Records names the records to restore (at most MaxRestoreRecords; empty:
// every record of the sweep); Reason is required (audited); DryRun says
// what would be restored and appends nothing.
type ArchiveRestoreRequest struct {
	Records []string `json:"records,omitempty"`
	Reason  string   `json:"reason"`
	DryRun  bool     `json:"dryRun,omitempty"`
}

// MaxRestoreRecords bounds the records of one restore request.
const MaxRestoreRecords = 1000

// ArchiveRestoreResult is the answer of a restore: what was done (or, in a
// dry run, would be) with each record, the outcomes' counts, and the
// records named that the sweep does not hold (Missing).
type ArchiveRestoreResult struct {
	Sweep   uint64           `json:"sweep"`
	DryRun  bool             `json:"dryRun"`
	Results []RestoredRecord `json:"results"`
	Counts  map[string]int   `json:"counts"`
	Missing []string         `json:"missing,omitempty"`
}

// RestoredRecord is one record's outcome: restored (its whole history
// appended), completed (the rest of an interrupted restore), present (its
// history is there already) or diverged (it failed again since; the live
// record wins, nothing is appended); Appended counts the streams.
type RestoredRecord struct {
	ID       string `json:"id"`
	Outcome  string `json:"outcome"`
	Appended int    `json:"appended"`
}
