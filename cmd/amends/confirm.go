package main

import (
	"github.com/spf13/cobra"
)

// confirmFlags are the confirmation of every bulk command (a batch of
// prepares or force-prepares, rules apply, replay, holds release): one
// rule for all of them. --dry-run shows what the command would do and
// changes nothing; --yes does it; exactly one of the two must be given on
// the command line, never by the environment (see env.go), so that no
// shell variable and no forgotten flag runs a bulk change unseen.
type confirmFlags struct {
	dryRun bool
	yes    bool
}

// add adds --dry-run and --yes to cmd; scope prefixes their help ("batch:
// " where the command also acts on one record).
func (f *confirmFlags) add(cmd *cobra.Command, scope, what string) {
	fs := cmd.Flags()
	fs.BoolVar(&f.dryRun, "dry-run", false, scope+"show "+what+" would be done, change nothing")
	fs.BoolVar(&f.yes, "yes", false, scope+"do it (a bulk change needs --yes or --dry-run)")
}

// check returns the usage error of a bulk command given neither or both.
func (f *confirmFlags) check(command string) error {
	if f.dryRun == f.yes {
		return usageErrorf("%s needs --dry-run (to see what it would do) or --yes (to do it), not %s",
			command, map[bool]string{true: "both", false: "neither"}[f.dryRun])
	}
	return nil
}
