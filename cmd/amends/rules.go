package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/rules"
)

const rulesLong = `Rules act on failures as they are recorded: an operator rule matches a
fingerprint (amends summary --by fingerprint lists them), or a function and
error code, and marks the failure UNRECOVERABLE or RECOVERABLE, applies a
retry spec, parks it until a new build of its processor registers (action
PARK_UNTIL_DEPLOY, stored as HOLD_UNTIL_DEPLOY: the scheduler then releases
the parked records, a canary first and the rest in steps), or waives it (recorded, never retried). A rule acts from when it is
added; apply it to the records already there with "amends rules apply".
Every change is audited with who, why and when.`

func newRulesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List, add, remove and apply the operators' rules on failures",
		Long:  rulesLong,
		Args:  noArgs,
	}
	cmd.AddCommand(newRulesListCmd(a), newRulesAddCmd(a), newRulesRemoveCmd(a), newRulesApplyCmd(a))
	return cmd
}

func newRulesListCmd(a *app) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the rules with how many records each touched and matches",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			rs, err := c.Rules(cmd.Context())
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printList(a.stdout, listJSON[api.Rule]{Items: rs})
			}
			if len(rs) == 0 {
				fmt.Fprintln(a.stdout, "no rules; add one with `amends rules add` (a fingerprint, or a function and error code, and an action)")
				return nil
			}
			now := a.now()
			tw := newTable(a.stdout)
			fmt.Fprintln(tw, "ID\tMATCH\tACTION\tTOUCHED\tMATCHING\tSTATE\tBY\tADDED\tREASON")
			for _, r := range rs {
				state := "live"
				switch {
				case r.RemovedAt != 0:
					state = "removed " + when(r.RemovedAt, now)
				case !r.Live:
					state = "expired"
				case r.ExpiresAt != 0:
					state = "expires " + when(r.ExpiresAt, now)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.ID, matchText(r.Match), r.Action, r.Touched, r.Matching, state, r.Actor, when(r.CreatedAt, now), r.Reason)
			}
			return tw.Flush()
		},
	}
	cf.add(a, cmd)
	return outputs(outputList, cmd)
}

func matchText(m api.RuleMatch) string {
	if m.Fingerprint != "" {
		return m.Fingerprint
	}
	return fmt.Sprintf("%s.%s@%s %s", m.Processor, m.Function, m.FunctionContext, m.ErrorCode)
}

func newRulesAddCmd(a *app) *cobra.Command {
	var (
		cf      clientFlags
		confirm confirmFlags
		rf      ruleFlags
	)
	cmd := &cobra.Command{
		Use:   "add --action ACTION (--fingerprint FP | --function-context C --processor P --function F --error-code E) --reason WHY",
		Short: "Add a rule that acts on failures from now on",
		Long: "Add a rule. ACTION is MARK_UNRECOVERABLE, MARK_RECOVERABLE, APPLY_RETRY_SPEC (with --max-retries, --min-backoff, " +
			"--execution-timeout and optionally --max-backoff and --jitter), PARK_UNTIL_DEPLOY (park until a new build registers; " +
			"HOLD_UNTIL_DEPLOY, its stored name, is the same) or WAIVE.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := rf.request(cmd, a.now())
			if err != nil {
				return err
			}
			if confirm.dryRun && confirm.yes {
				return usageErrorf("give --dry-run or --yes, not both")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			if confirm.dryRun {
				return dryRunRuleAdd(cmd, a, c, &cf, req)
			}
			r, err := c.AddRule(cmd.Context(), req)
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, r)
			}
			fmt.Fprintf(a.stdout, "added rule %s: %s on %s; it matches %d unfinished records now (apply it to them with `amends rules apply %s`)\n",
				r.ID, r.Action, matchText(r.Match), r.Matching, r.ID)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&rf.action, "action", "", "what the rule does (required)")
	fs.StringVar(&rf.fp, "fingerprint", "", "match failures of this fingerprint")
	fs.StringVar(&rf.fnCtx, "function-context", "", "match failures of a function of this context (with --processor, --function, --error-code)")
	fs.StringVar(&rf.proc, "processor", "", "the function's processor")
	fs.StringVar(&rf.fn, "function", "", "the function's name")
	fs.StringVar(&rf.code, "error-code", "", "the failure's error code")
	fs.StringVar(&rf.why, "reason", "", "why, recorded in the rule's audit (required)")
	fs.DurationVar(&rf.expires, "expires-in", 0, "end the rule after this long (default: never)")
	fs.Int32Var(&rf.maxRetries, "max-retries", aggregate.DefaultRetrySpec.MaxRetries, "APPLY_RETRY_SPEC: most automatic retries")
	fs.Int32Var(&rf.minBackoff, "min-backoff", aggregate.DefaultRetrySpec.MinBackoff, "APPLY_RETRY_SPEC: seconds before the first retry, doubling")
	fs.Int32Var(&rf.timeout, "execution-timeout", aggregate.DefaultRetrySpec.ExecutionTimeout, "APPLY_RETRY_SPEC: seconds a replay may run")
	fs.Int32Var(&rf.maxBackoff, "max-backoff", 0, "APPLY_RETRY_SPEC: cap of one interval in seconds (0: none)")
	fs.Float64Var(&rf.jitter, "jitter", 0, "APPLY_RETRY_SPEC: largest fraction, 0 to 1, taken off an interval")
	cf.add(a, cmd)
	confirm.add(cmd, "", "the rule and how many unfinished records it would match now; what")
	return outputs(outputDocument, cmd)
}

// dryRunRuleAdd prints the rule req would add and how many unfinished
// records (FAILED or PREPARED) it would match now; it adds nothing.
func dryRunRuleAdd(cmd *cobra.Command, a *app, c *client.Client, cf *clientFlags, req api.RuleRequest) error {
	m := req.Match
	f := api.Filter{Fingerprint: m.Fingerprint, FunctionContext: m.FunctionContext, Processor: m.Processor, Function: m.Function, ErrorCode: m.ErrorCode}
	n := 0
	for _, st := range []aggregate.Status{aggregate.StatusFailed, aggregate.StatusPrepared} {
		f.Status = st
		k, err := c.Count(cmd.Context(), f)
		if err != nil {
			return apiError(cmd, "", err)
		}
		n += k
	}
	if cf.output == "json" {
		return printJSON(a.stdout, struct {
			DryRun   bool            `json:"dryRun"`
			Rule     api.RuleRequest `json:"rule"`
			Matching int             `json:"matching"`
		}{true, req, n})
	}
	fmt.Fprintf(a.stdout, "dry run: would add a rule %s on %s; it would match %d unfinished records now; nothing was added\n", req.Action, matchText(m), n)
	return nil
}

func newRulesRemoveCmd(a *app) *cobra.Command {
	var (
		cf      clientFlags
		confirm confirmFlags
		why     string
	)
	cmd := &cobra.Command{
		Use:   "remove RULE --reason WHY (--dry-run | --yes)",
		Short: "Remove a rule: it no longer matches, and keeps its audit",
		Args:  exactlyOneRule,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := confirm.check("rules remove"); err != nil {
				return err
			}
			if strings.TrimSpace(why) == "" {
				return usageErrorf("--reason is required: rules are audited")
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			id, err := ruleArg(cmd, c, args[0])
			if err != nil {
				return err
			}
			var r api.Rule
			if confirm.dryRun {
				r, err = c.Rule(cmd.Context(), id)
			} else {
				r, err = c.RemoveRule(cmd.Context(), id, why)
			}
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, r)
			}
			if confirm.dryRun {
				fmt.Fprintf(a.stdout, "dry run: would remove rule %s (%s on %s); it touched %d records; nothing was removed\n", r.ID, r.Action, matchText(r.Match), r.Touched)
				return nil
			}
			fmt.Fprintf(a.stdout, "removed rule %s (%s on %s); it touched %d records\n", r.ID, r.Action, matchText(r.Match), r.Touched)
			return nil
		},
	}
	cmd.Flags().StringVar(&why, "reason", "", "why, recorded in the rule's audit (required)")
	cf.add(a, cmd)
	confirm.add(cmd, "", "the rule that")
	return takesID(idRule, outputs(outputDocument, cmd))
}

func newRulesApplyCmd(a *app) *cobra.Command {
	var (
		cf        clientFlags
		confirm   confirmFlags
		requestID string
		limit     int
		rate      float64
		why       string
	)
	cmd := &cobra.Command{
		Use:   "apply RULE (--dry-run | --yes)",
		Short: "Apply a rule to the unfinished records it matches now, as a batch",
		Long:  "Apply runs the rule's command on the records it matches, oldest failure first, paced. Like every bulk command it needs --dry-run, which reports what would happen, or --yes, which does it. Running it again with the same --request-id applies nothing twice.",
		Args:  exactlyOneRule,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := confirm.check("rules apply"); err != nil {
				return err
			}
			dryRun := confirm.dryRun
			if limit < 0 || !bounds.Within(rate, 0, api.MaxBatchRate) {
				return usageErrorf("--limit must not be negative and --rate must be from 0 to %g", api.MaxBatchRate)
			}
			if !dryRun && requestID == "" {
				requestID = uuid.NewString()
			}
			c, err := cf.client(0)
			if err != nil {
				return err
			}
			id, err := ruleArg(cmd, c, args[0])
			if err != nil {
				return err
			}
			res, err := c.ApplyRule(cmd.Context(), id, api.RuleApplyRequest{DryRun: dryRun, RequestID: requestID, Limit: limit, RatePerSecond: rate, Reason: why})
			if err != nil {
				return apiError(cmd, "", err)
			}
			if cf.output == "json" {
				return printJSON(a.stdout, res)
			}
			verb := "applied"
			if dryRun {
				verb = "dry run of"
			}
			fmt.Fprintf(a.stdout, "%s rule %s (%s) on %d of %d matching records:", verb, id, res.Command, len(res.Records), res.Matched)
			for _, k := range []string{api.OutcomeApplied, api.OutcomeDuplicate, api.OutcomeRejected, api.OutcomeFailed, api.OutcomeWould, api.OutcomeWouldNot, "held"} {
				if n := res.Counts[k]; n > 0 {
					fmt.Fprintf(a.stdout, " %s %d", k, n)
				}
			}
			fmt.Fprintln(a.stdout)
			if !dryRun {
				fmt.Fprintf(a.stdout, "request id %s (give it again with --request-id to finish an interrupted run)\n", requestID)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	confirm.add(cmd, "", "what")
	fs.StringVar(&requestID, "request-id", "", "name of the run: the same id applies nothing twice (default: a new id)")
	fs.IntVar(&limit, "limit", 0, "most records to touch (default: the server's batch limit)")
	fs.Float64Var(&rate, "rate", 0, "records per second (default 50)")
	fs.StringVar(&why, "reason", "", "why, recorded on every command (default: the rule's reason)")
	cf.add(a, cmd)
	return takesID(idRule, outputs(outputDocument, cmd))
}

// exactlyOneRule accepts one rule id.
func exactlyOneRule(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return usageErrorf("%s takes one rule id; list them with `amends rules list`", cmd.CommandPath())
	}
	if len(args[0]) > 64 || strings.ContainsFunc(args[0], func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return usageErrorf("the rule id %s is not one: ids look like r-0123456789ab", quoteShort(args[0]))
	}
	return nil
}

// ruleFlags are the flags of amends rules add.
type ruleFlags struct {
	fp, fnCtx, proc, fn, code, action, why string
	expires                                time.Duration
	maxRetries, minBackoff, timeout        int32
	maxBackoff                             int32
	jitter                                 float64
}

// request is the rule the flags ask for at now; a flag missing, out of
// bounds or given without its action is a usage error that names it.
func (rf *ruleFlags) request(cmd *cobra.Command, now time.Time) (api.RuleRequest, error) {
	req := api.RuleRequest{Match: api.RuleMatch{Fingerprint: rf.fp, FunctionContext: rf.fnCtx, Processor: rf.proc, Function: rf.fn, ErrorCode: rf.code},
		Action: strings.ToUpper(strings.TrimSpace(rf.action)), Reason: strings.TrimSpace(rf.why)}
	if req.Action == rules.ParkUntilDeploySpelling {
		// The wire keeps the action's first name, which every server knows.
		req.Action = rules.ParkUntilDeploy
	}
	switch {
	case req.Action == "":
		return req, usageErrorf("--action is required: MARK_UNRECOVERABLE, MARK_RECOVERABLE, APPLY_RETRY_SPEC, PARK_UNTIL_DEPLOY or WAIVE")
	case req.Reason == "":
		return req, usageErrorf("--reason is required: rules are audited")
	case rf.fp != "" && !fingerprint.Valid(rf.fp):
		return req, usageErrorf("--fingerprint must be fp1- followed by 16 hexadecimal digits, got %s", quoteShort(rf.fp))
	case rf.fp == "" && (rf.fnCtx == "" || rf.proc == "" || rf.fn == "" || rf.code == ""):
		return req, usageErrorf("give --fingerprint, or all of --function-context, --processor, --function and --error-code")
	case rf.expires < 0:
		return req, usageErrorf("--expires-in must not be negative, got %s", rf.expires)
	}
	spec, err := rf.retrySpec(cmd, req.Action)
	if err != nil {
		return req, err
	}
	req.RetrySpec = spec
	if rf.expires > 0 {
		req.ExpiresAt = now.Add(rf.expires).UnixMilli()
	}
	return req, nil
}

// retrySpec is the retry spec of an APPLY_RETRY_SPEC rule, nil for
// another action, which takes none of its flags.
func (rf *ruleFlags) retrySpec(cmd *cobra.Command, action string) (*aggregate.RetrySpec, error) {
	if action != "APPLY_RETRY_SPEC" {
		for _, name := range []string{"max-retries", "min-backoff", "max-backoff", "jitter"} {
			if cmd.Flags().Changed(name) {
				return nil, usageErrorf("the retry spec flags go with --action APPLY_RETRY_SPEC only")
			}
		}
		return nil, nil
	}
	spec := aggregate.RetrySpec{MaxRetries: rf.maxRetries, MinBackoff: rf.minBackoff, ExecutionTimeout: rf.timeout, MaxBackoff: rf.maxBackoff, Jitter: rf.jitter}
	if err := aggregate.ValidateRetrySpec(spec); err != nil {
		return nil, usageErrorf("the retry spec: %v", err)
	}
	return &spec, nil
}
