package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/internal/text"
)

// withReason lists every command that takes --reason, by its path.
func withReason(root *cobra.Command) [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Flags().Lookup("reason") != nil && c.Runnable() {
			out = append(out, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	return out
}

// Every command that takes --reason checks it by the one rule of operator
// text before it sends anything (no server runs here: a reason it let
// through would end in a connection error, not a usage error), and the
// error names the flag and the character.
func TestEveryReasonFlagIsCheckedByTheOneRule(t *testing.T) {
	var c cli
	cmds := withReason(newRootCmd(c.app()))
	require.GreaterOrEqual(t, len(cmds), 10, "prepare, force-prepare, circuits open/close, rules add/remove/apply, holds release/skip, repair, replay, ...")
	for _, path := range cmds {
		for in, msg := range map[string]string{
			"approved \u202egnp.exe":  "--reason has the invisible character U+202E at byte 9",
			"one\u2028two":            "--reason has the invisible character U+2028",
			"csi \u009b":              "--reason must be UTF-8 text without control characters: it has U+009B",
			"two\nlines":              "--reason must be one line without control characters",
			strings.Repeat("x", 2000): "--reason is 2000 bytes, over the limit of 1024",
		} {
			found := false
			// Arguments of the shapes the commands take, so that the flag
			// is reached.
			for _, extra := range [][]string{nil, {"x"}, {"x", "RECOVERABLE"}, {"order.Mailer.send"}, {"x", "y"}, {"x", "y", "z"}} {
				if found {
					break
				}
				var c cli
				c.env = map[string]string{"AMENDS_SERVER": "http://127.0.0.1:1"}
				args := append(append(append([]string{}, path...), "--reason", in), extra...)
				if c.run(t, args...) == exitUsage && strings.Contains(c.stderr.String(), msg) {
					found = true
				}
			}
			assert.True(t, found, "amends %s --reason %q is refused with %q", strings.Join(path, " "), in, msg)
		}
	}
}

// What the CLI takes as a reason the rule takes, and the reverse.
func TestReasonFlagFollowsTheRule(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.String().Draw(rt, "reason")
		fs := newRootCmd((&cli{}).app()).Flags()
		fs.String("reason", "", "")
		require.NoError(rt, fs.Set("reason", s))
		err := checkOperatorText(fs)
		assert.Equal(rt, text.Line(s, text.MaxReasonBytes) != nil, err != nil, "%q: %v", s, err)
		if err != nil {
			assert.True(rt, strings.HasPrefix(err.Error(), "--reason "), "%v", err)
		}
	})
}
