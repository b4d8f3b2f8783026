package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natsconn"
)

const archiveLong = `Archive reads what retention archived before it removed records (amends
serve --archive): one manifest per sweep batch and one gzip NDJSON object
per function (docs/retention.md has the format).

--archive names it as serve does: dir:/path, or objectstore:BUCKET with
--nats-url (and --nats-creds) of the NATS the bucket is on.

list shows the sweeps, show a sweep's records or one record's history,
restore appends archived histories to the event store again so that the
records are queryable again (it needs --nats-url, and --dry-run or --yes).`

// maxRestoreRecords bounds the --record flags of one restore.
const maxRestoreRecords = 1000

// archiveFlags are the flags every archive command takes.
type archiveFlags struct {
	spec, natsURL, creds, output string
}

func (f *archiveFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.spec, "archive", "", "the archive: dir:/path or objectstore:BUCKET (required)")
	fs.StringVar(&f.natsURL, "nats-url", "", "NATS server of an objectstore: archive, and of the event store for restore")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file for --nats-url")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
}

func (f *archiveFlags) check() error {
	if f.spec == "" {
		return usageErrorf("--archive is required: dir:/path or objectstore:BUCKET")
	}
	if err := checkArchiveSpec(f.spec); err != nil {
		return usageErrorf("--archive: %v", err)
	}
	if strings.HasPrefix(f.spec, "objectstore:") && f.natsURL == "" {
		return usageErrorf("--archive %s needs --nats-url: the bucket is on a NATS server", f.spec)
	}
	if f.natsURL != "" {
		if err := natsconn.CheckURLs(f.natsURL); err != nil {
			return usageErrorf("--nats-url: %v", err)
		}
	}
	if err := checkOutput(f.output); err != nil {
		return err
	}
	return nil
}

// open connects to NATS if a URL is given and opens the archive.
func (f *archiveFlags) open(ctx context.Context) (archive.Sink, *nats.Conn, jetstream.JetStream, error) {
	var nc *nats.Conn
	var js jetstream.JetStream
	if f.natsURL != "" {
		var err error
		if nc, err = natsconn.Connect(natsconn.ClientConfig{URL: f.natsURL, CredsFile: f.creds, Name: "amends archive"}); err != nil {
			return nil, nil, nil, fmt.Errorf("--nats-url: %w", err)
		}
		if js, err = jetstream.New(nc); err != nil {
			nc.Close()
			return nil, nil, nil, err
		}
	}
	sink, err := archive.Open(ctx, js, f.spec, 0)
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		if errors.Is(err, archive.ErrInvalid) {
			return nil, nil, nil, usageErrorf("--archive: %v", err)
		}
		return nil, nil, nil, err
	}
	return sink, nc, js, nil
}

func newArchiveCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "archive", Short: "List, show and restore the records retention archived", Long: archiveLong, Args: noArgs}
	cmd.AddCommand(newArchiveListCmd(a), newArchiveShowCmd(a), newArchiveRestoreCmd(a))
	return cmd
}

func newArchiveListCmd(a *app) *cobra.Command {
	var f archiveFlags
	cmd := &cobra.Command{
		Use: "list", Short: "List the archived sweeps", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			sink, nc, _, err := f.open(cmd.Context())
			if err != nil {
				return err
			}
			if nc != nil {
				defer nc.Close()
			}
			out, err := archive.ListSweeps(cmd.Context(), sink)
			if err != nil {
				return err
			}
			if f.output == "json" {
				return printList(a.stdout, listJSON[api.ArchiveSweep]{Items: out})
			}
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "SWEEP\tCREATED\tOBJECTS\tRECORDS\tSTREAMS\tBYTES\tERROR")
			for _, s := range out {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Sweep, when(s.CreatedAt, a.now()), s.Objects, s.Records, s.Streams, s.Bytes, oneLine(s.Error, 120))
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	return outputs(outputList, cmd)
}

// archivedIDs resolves the --record values args, each a record id or a
// unique prefix of one, among sweep's records: it reads the sweep once more
// only when a value is not a whole UUID. It returns nil for no args.
func archivedIDs(ctx context.Context, sink archive.Sink, sweep uint64, args []string) (map[string]bool, error) {
	if len(args) == 0 {
		return nil, nil
	}
	ids := map[string]bool{}
	var all []string
	for _, arg := range args {
		if len(arg) == 36 && uuid.Validate(arg) == nil {
			ids[arg] = true
			continue
		}
		if all == nil {
			all = []string{}
			if _, err := archive.Each(ctx, sink, sweep, nil, func(_ archive.Object, r archive.Record) error {
				all = append(all, r.ID)
				return nil
			}); err != nil {
				return nil, err
			}
		}
		id, err := uniquePrefix("archived record", arg, all)
		if err != nil {
			return nil, err
		}
		ids[id] = true
	}
	return ids, nil
}

func newArchiveShowCmd(a *app) *cobra.Command {
	var (
		f      archiveFlags
		sweep  uint64
		record string
	)
	cmd := &cobra.Command{
		Use: "show", Short: "Show a sweep's archived records, or one record's history", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if sweep == 0 {
				return usageErrorf("--sweep is required: a sweep number from amends archive list")
			}
			var args []string
			if record != "" {
				if err := eventstore.ValidateID("--record", record); err != nil {
					return usageErrorf("%v", err)
				}
				args = []string{record}
			}
			sink, nc, _, err := f.open(cmd.Context())
			if err != nil {
				return err
			}
			if nc != nil {
				defer nc.Close()
			}
			ids, err := archivedIDs(cmd.Context(), sink, sweep, args)
			if err != nil {
				return err
			}
			var recs []api.ArchivedRecord
			var history []eventstore.Stream
			found, err := archive.Each(cmd.Context(), sink, sweep, ids, func(o archive.Object, r archive.Record) error {
				recs = append(recs, archive.Summarize(o, r))
				if record != "" {
					history = r.Streams
				}
				return nil
			})
			if err != nil {
				return err
			}
			if record != "" && found == 0 {
				return notFound{fmt.Errorf("sweep %d of %s has no record %s; list its records with amends archive show --sweep %d", sweep, sink, record, sweep)}
			}
			if record != "" {
				return printArchivedHistory(a, f.output, recs[0], history)
			}
			if f.output == "json" {
				return printList(a.stdout, listJSON[api.ArchivedRecord]{Items: recs})
			}
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "RECORD\tFUNCTION\tVERSIONS\tSTATUS\tLAST OUTCOME")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s.%s@%s\t%d\t%s\t%s\n", r.ID, r.Function.ProcessorName, r.Function.Name, r.Function.ContextName, r.Versions, r.Status, when(r.ExecuteAt, a.now()))
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	cmd.Flags().Uint64Var(&sweep, "sweep", 0, "the sweep (required)")
	cmd.Flags().StringVar(&record, "record", "", "show this record's archived history (its id or a unique prefix)")
	return takesID(idArchived, outputs(outputList, cmd))
}

func printArchivedHistory(a *app, output string, r api.ArchivedRecord, streams []eventstore.Stream) error {
	if output == "json" {
		type line struct {
			Seq    uint64            `json:"seq"`
			Stream eventstore.Stream `json:"stream"`
		}
		out := make([]line, len(streams))
		for i, st := range streams {
			out[i] = line{Seq: st.Seq, Stream: st}
		}
		return printJSON(a.stdout, map[string]any{"record": r, "history": out})
	}
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "VERSION\tSEQ\tTIME\tACTOR\tEVENTS")
	for _, st := range streams {
		names := make([]string, len(st.Events))
		for i, e := range st.Events {
			names[i] = e.Name
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", st.Version, st.Seq, when(st.CreateTime, a.now()), oneLine(st.Headers[aggregate.HeaderActor], 40), strings.Join(names, ","))
	}
	return tw.Flush()
}

func newArchiveRestoreCmd(a *app) *cobra.Command {
	var (
		f       archiveFlags
		sweep   uint64
		records []string
		confirm confirmFlags
	)
	cmd := &cobra.Command{
		Use: "restore", Short: "Append archived histories to the event store again (dry run first)", Args: noArgs,
		Long: `Restore appends the archived histories of a sweep's records (or only those
of --record) to the compensation stream again, versions 1 to the last with
their ids, times and state, so that the projector gives them their views
back and they are queryable again. A record that exists again (it failed
again after its removal) is left alone (outcome diverged); one restored
already is left alone (present); an interrupted restore is completed.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			switch {
			case sweep == 0:
				return usageErrorf("--sweep is required: a sweep number from amends archive list")
			case confirm.check("archive restore") != nil:
				return confirm.check("archive restore")
			case f.natsURL == "":
				return usageErrorf("restore needs --nats-url: it appends to the event store on that NATS")
			case len(records) > maxRestoreRecords:
				return usageErrorf("--record is given %d times, over the limit of %d: restore the whole sweep instead", len(records), maxRestoreRecords)
			}
			for _, id := range records {
				if err := eventstore.ValidateID("--record", id); err != nil {
					return usageErrorf("%v", err)
				}
			}
			sink, nc, js, err := f.open(cmd.Context())
			if err != nil {
				return err
			}
			defer nc.Close()
			ids, err := archivedIDs(cmd.Context(), sink, sweep, records)
			if err != nil {
				return err
			}
			store, err := restoreStore(cmd.Context(), js)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Minute)
			defer cancel()
			var results []archive.RestoreResult
			found, err := archive.Each(ctx, sink, sweep, ids, func(_ archive.Object, r archive.Record) error {
				res, err := archive.Restore(ctx, store, r, confirm.dryRun)
				if err != nil {
					return err
				}
				results = append(results, res)
				return nil
			})
			printRestore(a.stdout, f.output, results, confirm.dryRun)
			if err != nil {
				return err
			}
			if len(ids) > 0 && found < len(ids) {
				return notFound{fmt.Errorf("sweep %d holds %d of the %d records given; the others were not restored", sweep, found, len(ids))}
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().Uint64Var(&sweep, "sweep", 0, "the sweep to restore from (required)")
	cmd.Flags().StringArrayVar(&records, "record", nil, "restore only this record, by its id or a unique prefix (repeatable, at most 1000)")
	confirm.add(cmd, "", "what")
	return takesID(idArchived, outputs(outputList, cmd))
}

func printRestore(w io.Writer, output string, results []archive.RestoreResult, dry bool) {
	if output == "json" {
		_ = printList(w, listJSON[archive.RestoreResult]{Items: results})
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "RECORD\tOUTCOME\tSTREAMS")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", r.ID, r.Outcome, r.Appended)
	}
	_ = tw.Flush()
	if dry {
		fmt.Fprintln(w, "dry run: nothing was appended; run again with --yes")
	}
}

// restoreStore returns an event store whose settings are those of the
// compensation stream as it exists (storage, replicas, message size,
// duplicate window), so that restore needs none of serve's flags; a
// missing stream is created with the defaults.
func restoreStore(ctx context.Context, js jetstream.JetStream) (*jsstore.Store, error) {
	opts := []jsstore.Option{jsstore.WithRemovable(aggregate.Context), jsstore.WithCompressed(aggregate.Context)}
	probe, err := jsstore.New(js)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, probe.StreamName(aggregate.Context))
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return nil, fmt.Errorf("read the compensation stream: %w", err)
	default:
		c := st.CachedInfo().Config
		opts = append(opts, jsstore.WithStorage(c.Storage), jsstore.WithReplicas(max(c.Replicas, 1)), jsstore.WithMaxMsgSize(c.MaxMsgSize),
			jsstore.WithDuplicateWindow(c.Duplicates))
	}
	return jsstore.New(js, opts...)
}
