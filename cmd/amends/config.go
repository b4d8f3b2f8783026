package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// configHelp explains the config file in serve's help.
const configHelp = `--config names a file of settings, one "flag-name: value" per line (a
YAML subset: # comments, optionally quoted values), e.g.

    http: 0.0.0.0:8080
    tokens-file: /etc/amends/tokens
    scheduler-period: 30s

A flag on the command line wins over its AMENDS_ variable, which wins over
the file, which wins over the default.`

// applyConfig sets every flag of fs that neither the command line nor the
// environment set from the config file at path. An unknown key or a value
// the flag cannot parse is a usage error naming the file, line and key.
func applyConfig(fs *pflag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return usageErrorf("--config: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return usageErrorf("%s:%d: want \"flag-name: value\", got %q", path, n, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if uq, err := strconv.Unquote(value); err == nil {
			value = uq
		}
		flag := fs.Lookup(key)
		if flag == nil || key == "config" || key == "help" {
			return usageErrorf("%s:%d: unknown setting %q; settings are the flags of the command without dashes", path, n, key)
		}
		if flag.Changed {
			continue
		}
		if err := fs.Set(key, value); err != nil {
			return usageErrorf("%s:%d: %q is not a valid value for --%s: %v", path, n, value, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return usageErrorf("--config %s: %v", path, err)
	}
	return nil
}
