package main

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// annotationID marks a command that takes an id (its value says of
// what: idRecord, idRule, idHeldEvent, idArchived): it takes a unique
// prefix of one too, as git and docker take short ids. A test over the
// command tree (TestTheCommandTreeFollowsOneRule) checks that every
// command whose use names an id has it, and that a prefix works.
const annotationID = "amends/id"

// What an id names (annotationID's values).
const (
	idRecord    = "record"          // a record: resolveID, through the API's idPrefix filter
	idRule      = "rule"            // a rule: ruleArg, among the rules
	idHeldEvent = "held-event"      // an event a hold holds: among the hold's events
	idArchived  = "archived-record" // a record of an archive sweep: among the sweep's records
)

// takesID marks cmd as taking an id of what (or a unique prefix of one).
func takesID(what string, cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationID] = what
	return cmd
}

// takesRecordID marks cmd as taking a record id or a unique prefix of one.
func takesRecordID(cmd *cobra.Command) *cobra.Command { return takesID(idRecord, cmd) }

// uniquePrefix returns the one of ids that arg names: arg itself when it
// is one of them; the one id that begins with arg; arg when none does (the
// caller's lookup then says it is unknown). A prefix of several ids is a
// usage error that names some of them; what names the kind of id.
func uniquePrefix(what, arg string, ids []string) (string, error) {
	var matches []string
	for _, id := range ids {
		if id == arg {
			return arg, nil
		}
		if strings.HasPrefix(id, arg) {
			matches = append(matches, id)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		more := ""
		if len(matches) > prefixCandidates {
			matches, more = matches[:prefixCandidates], ", ..."
		}
		return "", usageErrorf("the %s id prefix %s is ambiguous: it begins %s%s; give more of the id", what, quoteShort(arg), strings.Join(matches, ", "), more)
	}
	return arg, nil
}

// ruleArg resolves a rule id or a unique prefix of one among the rules.
func ruleArg(cmd *cobra.Command, c *client.Client, arg string) (string, error) {
	rs, err := c.Rules(cmd.Context())
	if err != nil {
		return "", apiError(cmd, "", err)
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return uniquePrefix("rule", arg, ids)
}

// heldEventArg resolves an event id, or a unique prefix of one, among the
// events the hold key holds.
func heldEventArg(cmd *cobra.Command, c *client.Client, key, arg string) (string, error) {
	h, err := c.Hold(cmd.Context(), key)
	if err != nil {
		return "", apiError(cmd, "", err)
	}
	ids := make([]string, len(h.Held))
	for i, e := range h.Held {
		ids[i] = e.EventID
	}
	return uniquePrefix("held event", arg, ids)
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
	// One more than the error names, so that it can say there are more.
	p, err := c.List(ctx, api.Query{Filter: api.Filter{IDPrefix: arg}, Limit: prefixCandidates + 1})
	if err != nil {
		return "", err
	}
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.ID
	}
	return uniquePrefix("record", arg, ids)
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

// resolveRecord replaces *id, a record id or a prefix of a live record's
// (a list filter's), with the whole id; "" stays. A whole id of a record
// that is gone (an audit entry may name one) is taken as it is.
func resolveRecord(cmd *cobra.Command, c *client.Client, id *string) error {
	if *id == "" {
		return nil
	}
	whole, err := resolveID(cmd.Context(), c, *id)
	if err != nil {
		return apiError(cmd, "", err)
	}
	*id = whole
	return nil
}

// record is the client of cf and the record args name (a whole id or a
// prefix), for the commands on one record.
func (cf *clientFlags) record(cmd *cobra.Command, args []string) (*client.Client, string, error) {
	c, err := cf.client(0)
	if err != nil {
		return nil, "", err
	}
	id, err := recordArg(cmd, c, args)
	return c, id, err
}
