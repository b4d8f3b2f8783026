package main

import (
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/internal/text"
)

// operatorTextFlags are the flags that carry an operator's words into an
// audit trail: every command that has one checks it, before anything is
// sent, by text.Line, the rule the server takes it by and reads it back by.
var operatorTextFlags = []string{"reason"}

// checkOperatorText checks the operator-text flags of a command's flag set
// as usage errors naming the flag: "--reason has the invisible character
// U+202E at byte 9 ...".
func checkOperatorText(fs *pflag.FlagSet) error {
	for _, name := range operatorTextFlags {
		f := fs.Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		if err := text.Line(f.Value.String(), text.MaxReasonBytes); err != nil {
			return usageErrorf("--%s %s", name, err)
		}
	}
	return nil
}
