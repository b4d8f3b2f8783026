package main

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// annotationID marks a command that takes a record id as its first
// argument: it takes a unique prefix of one too (resolveID), as git and
// docker take short ids. A test over the command tree checks that every
// command whose use names an ID has it.
const annotationID = "amends/record-id"

// takesRecordID marks cmd as taking a record id or a unique prefix of one.
func takesRecordID(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationID] = "prefix"
	return cmd
}

// prefixCandidates bounds the records an ambiguous prefix's error names.
const prefixCandidates = 3

// resolveID returns the record id arg names: arg itself when it is a
// whole UUID, or shorter than api.MinIDPrefix, or names no record by its
// beginning (the server then says it is unknown); the one record whose id
// begins with arg; or arg when a record has exactly that id. A prefix of
// several records is a usage error that names some of them.
func resolveID(ctx context.Context, c *client.Client, arg string) (string, error) {
	if len(arg) < api.MinIDPrefix || len(arg) == 36 && uuid.Validate(arg) == nil {
		return arg, nil
	}
	p, err := c.List(ctx, api.Query{Filter: api.Filter{IDPrefix: arg}, Limit: prefixCandidates})
	if err != nil {
		return "", err
	}
	ids := make([]string, 0, len(p.Items))
	for _, it := range p.Items {
		if it.ID == arg {
			return arg, nil
		}
		ids = append(ids, it.ID)
	}
	switch {
	case len(ids) == 1:
		return ids[0], nil
	case len(ids) > 1:
		more := ""
		if p.Next != "" {
			more = ", ..."
		}
		return "", usageErrorf("the id prefix %s is ambiguous: it begins %s%s; give more of the id", quoteShort(arg), strings.Join(ids, ", "), more)
	}
	return arg, nil
}

// recordArg resolves args[0] (resolveID) with cf's client, for a command
// whose first argument is a record id.
func recordArg(cmd *cobra.Command, c *client.Client, args []string) (string, error) {
	id, err := resolveID(cmd.Context(), c, args[0])
	if err != nil {
		return "", apiError(cmd, args[0], err)
	}
	return id, nil
}
