package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// envPrefix starts the environment variable of every flag.
const envPrefix = "AMENDS_"

// envAnnotation marks a flag that may be set from its environment variable.
const envAnnotation = "amends_env"

// envHelp explains the environment variables in the root help.
const envHelp = `Settings of where and how to run can also be set with environment
variables: AMENDS_ and the flag's name in upper case with dashes as
underscores (--data-dir is AMENDS_DATA_DIR, --server is AMENDS_SERVER).
That holds for the flags of serve, demo and bench, for --log-level, and for
the connection flags of the other commands: --server, --token and
--timeout. Flags that choose records or confirm an action (--yes, --id,
--processor, --limit, --reason, ...) come only from the command line, and a
variable of theirs is ignored with a note. A flag on the command line
wins over its variable; an empty variable counts as unset. Each flag that
has a variable names it in brackets in its help.`

// envName returns the environment variable of a flag: "data-dir" becomes
// "AMENDS_DATA_DIR".
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// annotateEnv lets every flag of fs be set from its environment variable
// and names the variable in the flag's help. Commands whose flags are all
// settings (serve, demo, bench) use it; commands that choose records or
// confirm actions list their few settings with allowEnv instead.
func annotateEnv(fs *pflag.FlagSet) {
	fs.VisitAll(allowEnvFlag)
}

// allowEnv lets the named flags of fs be set from their environment
// variables, as annotateEnv does for all.
func allowEnv(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if f := fs.Lookup(n); f != nil {
			allowEnvFlag(f)
		}
	}
}

func allowEnvFlag(f *pflag.Flag) {
	if f.Name == "help" || envAllowed(f) {
		return
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[envAnnotation] = []string{"true"}
	f.Usage += " [$" + envName(f.Name) + "]"
}

func envAllowed(f *pflag.Flag) bool { return len(f.Annotations[envAnnotation]) > 0 }

// applyEnv sets every flag of fs that the command line did not set and
// that may come from the environment (annotateEnv, allowEnv) from its
// variable, if that is set and not empty. A value the flag cannot parse is
// a usage error naming the variable. Other flags' variables are ignored
// (ignoredEnv lists them).
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || !envAllowed(f) {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = usageErrorf("environment variable %s=%s is not a valid value for --%s: %s", name, quoteShort(v), f.Name, wantValue(f.Value.Type(), e))
		}
	})
	return err
}

// ignoredEnv returns the set, non-empty variables of the flags of fs that
// may not come from the environment, sorted.
func ignoredEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if envAllowed(f) || f.Name == "help" {
			return
		}
		if v, ok := lookup(envName(f.Name)); ok && v != "" {
			names = append(names, envName(f.Name))
		}
	})
	slices.Sort(names)
	return names
}

// warnIgnoredEnv tells on w which variables of fs's flags were ignored, so
// that a variable left in a shell never changes what a command does unseen.
func warnIgnoredEnv(w io.Writer, fs *pflag.FlagSet, lookup func(string) (string, bool)) {
	names := ignoredEnv(fs, lookup)
	if len(names) == 0 {
		return
	}
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "--" + strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(n, envPrefix), "_", "-"))
	}
	fmt.Fprintf(w, "amends: ignoring %s: only --server, --token and --timeout come from the environment; give %s on the command line\n",
		strings.Join(names, ", "), strings.Join(flags, ", "))
}
