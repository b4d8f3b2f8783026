package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

const repairLong = `Repair undoes what a bad producer, a bad migration or a hand edit left in
the streams and buckets, without deleting history. Each repair is an
operator's action: it needs --reason and is logged with you as actor, and
it needs --dry-run (to see what it would do) or --yes (to do it).

The entries to repair are the ones amends quarantine list shows.`

const repairSkipLong = `Skip-message approves one message of an event store stream for every
loader to pass over: a message on a record's or an aggregate's subject that
is not a stream amends wrote (it does not decode, or its headers do not),
which otherwise makes every load of the aggregate fail for good, since the
streams deny deletes and purges. The message stays in the stream; loaders
read the aggregate as if it were not there, and new commands append after
it. A message that reads as a stream is refused.

--stream and --seq name the message, as amends quarantine list prints them
(STREAM and SEQ).`

const repairPurgeLong = `Purge-entry removes an entry of a KV bucket that amends quarantine list
shows as invalid (reason invalid_entry), also one under a key that nats.go
cannot address. It is refused unless the quarantine lists that bucket, key
and revision and the key is still at that revision: a valid entry, or one
written since, is never removed.

--bucket, --key and --revision are the entry's, as the list prints them
(CONSUMER is the bucket, SEQ the revision; the key ends the SUBJECT).`

func newRepairCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "repair", Short: "Repair a bricked aggregate or an invalid bucket entry (audited, dry run first)", Long: repairLong, Args: noArgs}
	cmd.AddCommand(newRepairSkipCmd(a), newRepairPurgeCmd(a))
	return cmd
}

// repairFlags are the flags every repair takes.
type repairFlags struct {
	reason   string
	dry, yes bool
}

func (f *repairFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.reason, "reason", "", "why (required, kept with the repair)")
	fs.BoolVar(&f.dry, "dry-run", false, "show what would be done, change nothing")
	fs.BoolVar(&f.yes, "yes", false, "do it")
}

func (f *repairFlags) check(what string) error {
	switch {
	case f.dry == f.yes:
		return usageErrorf("%s needs --dry-run (to see what it would do) or --yes (to do it), not %s", what, map[bool]string{true: "both", false: "neither"}[f.dry])
	case strings.TrimSpace(f.reason) == "":
		return usageErrorf("%s needs --reason: it is audited", what)
	}
	return nil
}

func newRepairSkipCmd(a *app) *cobra.Command {
	var (
		cf     clientFlags
		rf     repairFlags
		stream string
		seq    uint64
	)
	cmd := &cobra.Command{
		Use:   "skip-message",
		Short: "Make loaders pass over one message that bricks its aggregate",
		Long:  repairSkipLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.check("repair skip-message"); err != nil {
				return err
			}
			switch {
			case stream == "" || len(stream) > 256:
				return usageErrorf("--stream must name the event store stream (1 to 256 characters), as amends quarantine list prints it")
			case seq == 0:
				return usageErrorf("--seq must be the message's sequence, from 1")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			plan, err := c.SkipMessage(cmd.Context(), stream, seq, rf.reason, rf.dry)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, plan)
			}
			verb := "skipped"
			if rf.dry {
				verb = "would skip"
			}
			fmt.Fprintf(a.stdout, "%s message %d of %s on %s (%d bytes): %s\n", verb, plan.Seq, plan.Stream, cell(plan.Subject, 200), plan.Size, cell(plan.Problem, 300))
			if plan.Prev == 0 {
				fmt.Fprintln(a.stdout, "loaders then read no stream of the aggregate before it; its next command is its first")
			} else {
				fmt.Fprintf(a.stdout, "loaders then read the aggregate at version %d (message %d); its next command appends after the skipped message\n", plan.Version, plan.Prev)
			}
			return nil
		},
	}
	cf.add(a, cmd)
	rf.add(cmd)
	cmd.Flags().StringVar(&stream, "stream", "", "the message's stream (STREAM in amends quarantine list)")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "the message's sequence (SEQ in amends quarantine list)")
	return outputs(outputDocument, cmd)
}

func newRepairPurgeCmd(a *app) *cobra.Command {
	var (
		cf          clientFlags
		rf          repairFlags
		bucket, key string
		revision    uint64
	)
	cmd := &cobra.Command{
		Use:   "purge-entry",
		Short: "Remove a KV bucket's entry that the quarantine lists as invalid",
		Long:  repairPurgeLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.check("repair purge-entry"); err != nil {
				return err
			}
			switch {
			case bucket == "" || len(bucket) > 256:
				return usageErrorf("--bucket must name the bucket (1 to 256 characters)")
			case key == "" || len(key) > 1024:
				return usageErrorf("--key must be the entry's key (1 to 1024 bytes)")
			case revision == 0:
				return usageErrorf("--revision must be the entry's revision, from 1 (SEQ in amends quarantine list)")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			plan, err := c.PurgeEntry(cmd.Context(), bucket, key, revision, rf.reason, rf.dry)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, plan)
			}
			verb := "purged"
			if rf.dry {
				verb = "would purge"
			}
			fmt.Fprintf(a.stdout, "%s %s of bucket %s at revision %d: %s\n", verb, cell(key, 200), bucket, revision, cell(plan.Entry.Error, 300))
			return nil
		},
	}
	cf.add(a, cmd)
	rf.add(cmd)
	cmd.Flags().StringVar(&bucket, "bucket", "", "the bucket (CONSUMER in amends quarantine list)")
	cmd.Flags().StringVar(&key, "key", "", "the entry's key")
	cmd.Flags().Uint64Var(&revision, "revision", 0, "the entry's revision (SEQ in amends quarantine list)")
	return outputs(outputDocument, cmd)
}
