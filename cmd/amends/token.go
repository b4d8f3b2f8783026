package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/server"
)

const tokenLong = `Token makes the lines of a tokens file (serve --tokens-file).

"amends token new NAME ROLE" makes a new random secret, prints it once, and
prints the line to add to the tokens file: it holds the secret's SHA-256,
never the secret, so the file is no key to the API. Give the secret to
the token's holder (AMENDS_TOKEN for the CLI, the dashboard's sign-in);
nothing keeps a copy. "amends token hash NAME ROLE" prints the line of an
existing secret, read from --secret-file (- for standard input), to replace
a plaintext line without changing the secret.

ROLE is viewer (reads) or operator (also commands). --expires ends the
token: a duration from now (720h) or a time (2027-01-31, RFC 3339). serve
re-reads the tokens file when it changes; a removed line revokes its token
within seconds and ends its sessions.`

func newTokenCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make tokens-file lines: a new token (amends token new) or the hash of a secret",
		Long:  tokenLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stderr, cmd.UsageString())
			return usageErrorf("token needs a subcommand: new or hash")
		},
	}
	var expires string
	newCmd := &cobra.Command{
		Use:   "new NAME ROLE",
		Short: "Make a new token: print its secret once and the line for the tokens file",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, role, exp, err := tokenArgs(a, args, expires)
			if err != nil {
				return err
			}
			secret := server.NewSecret()
			fmt.Fprintf(a.stdout, "secret: %s\nline: %s\n", secret, server.TokenLine(name, role, secret, exp))
			fmt.Fprintln(a.stderr, "amends: the secret is shown once: give it to the token's holder; add the line to the tokens file (serve re-reads it)")
			return nil
		},
	}
	newCmd.Flags().StringVar(&expires, "expires", "", "when the token stops working: a duration from now (720h) or a time (2027-01-31, RFC 3339)")
	var secretFile string
	var hashExpires string
	hashCmd := &cobra.Command{
		Use:   "hash NAME ROLE --secret-file FILE",
		Short: "Print the tokens-file line of an existing secret (read from a file or standard input)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, role, exp, err := tokenArgs(a, args, hashExpires)
			if err != nil {
				return err
			}
			if secretFile == "" {
				return usageErrorf("token hash needs --secret-file FILE (- for standard input): a secret never goes on the command line")
			}
			secret, err := readSecret(cmd.InOrStdin(), secretFile)
			if err != nil {
				return err
			}
			if len(secret) < server.MinSecretLength {
				return usageErrorf("the secret is %d characters; a token's secret has at least %d (amends token new makes one)", len(secret), server.MinSecretLength)
			}
			fmt.Fprintf(a.stdout, "line: %s\n", server.TokenLine(name, role, secret, exp))
			return nil
		},
	}
	hashCmd.Flags().StringVar(&secretFile, "secret-file", "", "file holding the secret on its first line (- for standard input)")
	hashCmd.Flags().StringVar(&hashExpires, "expires", "", "when the token stops working: a duration from now (720h) or a time (2027-01-31, RFC 3339)")
	cmd.AddCommand(newCmd, hashCmd)
	return cmd
}

// tokenArgs checks NAME, ROLE and --expires.
func tokenArgs(a *app, args []string, expires string) (string, server.Role, time.Time, error) {
	name, role := args[0], server.Role(args[1])
	if role != server.RoleViewer && role != server.RoleOperator {
		return "", "", time.Time{}, usageErrorf("ROLE must be viewer or operator, got %s", quoteShort(args[1]))
	}
	// The line must parse back to this name: check it as the server will.
	if _, err := server.ParseTokens(name + ":" + string(role) + ":" + server.HashSecret("x")); err != nil || strings.ContainsAny(name, " ,:#\t") {
		return "", "", time.Time{}, usageErrorf("NAME %s must be printable text without spaces, commas, colons or #, at most %d bytes (it is the actor of the audit trail)", quoteShort(name), server.MaxParamBytes)
	}
	var exp time.Time
	if expires != "" {
		if d, err := time.ParseDuration(expires); err == nil {
			if d <= 0 {
				return "", "", time.Time{}, usageErrorf("--expires %s must be in the future", expires)
			}
			exp = a.now().Add(d).UTC().Truncate(time.Second)
		} else if t, err := time.Parse(time.RFC3339, expires); err == nil {
			exp = t
		} else if t, err := time.Parse(time.DateOnly, expires); err == nil {
			exp = t
		} else {
			return "", "", time.Time{}, usageErrorf("--expires %s: want a duration (720h) or a time (2027-01-31 or RFC 3339)", quoteShort(expires))
		}
	}
	return name, role, exp, nil
}

// readSecret reads the first line of path ("-": in).
func readSecret(in io.Reader, path string) (string, error) {
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", usageErrorf("--secret-file: %v", err)
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(io.LimitReader(in, 16<<10))
	if !sc.Scan() {
		return "", usageErrorf("--secret-file %s is empty", path)
	}
	return strings.TrimSpace(sc.Text()), nil
}
