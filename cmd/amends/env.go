package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix starts the environment variable of every flag.
const envPrefix = "AMENDS_"

// envHelp explains the environment variables in the root help.
const envHelp = `Every flag can also be set with an environment variable named AMENDS_ and
the flag's name in upper case with dashes as underscores: --data-dir is
AMENDS_DATA_DIR, --nats-url is AMENDS_NATS_URL. A flag on the command line
wins over its variable; an empty variable counts as unset. Each flag's help
names its variable in brackets.`

// envName returns the environment variable of a flag: "data-dir" becomes
// "AMENDS_DATA_DIR".
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// annotateEnv appends each flag's environment variable to its help.
func annotateEnv(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		f.Usage += " [$" + envName(f.Name) + "]"
	})
}

// applyEnv sets every flag of fs that the command line did not set from
// its environment variable, if that is set and not empty. A value the flag
// cannot parse is a usage error naming the variable.
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = usageErrorf("environment variable %s=%q is not a valid value for --%s: %v", name, v, f.Name, e)
		}
	})
	return err
}
