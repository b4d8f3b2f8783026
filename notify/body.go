package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/amends-dev/amends/aggregate"
)

// The body formats of an endpoint.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// maxErrorMsg bounds the error message a body carries; stack traces are
// never sent.
const maxErrorMsg = 1024

// Body is the generic JSON body.
type Body struct {
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	Time    int64         `json:"time"`
	TraceID string        `json:"traceId,omitempty"`
	Link    string        `json:"link,omitempty"`
	Record  *BodyRecord   `json:"record,omitempty"`
	Batch   *BatchSummary `json:"batch,omitempty"`
	Digest  []DigestGroup `json:"digest,omitempty"`
	Circuit *CircuitNote  `json:"circuit,omitempty"`
}

// BodyRecord is the record in a body.
type BodyRecord struct {
	ID          string                   `json:"id"`
	Version     uint64                   `json:"version"`
	Status      aggregate.Status         `json:"status"`
	Function    aggregate.FunctionInfo   `json:"function"`
	EventID     aggregate.EventID        `json:"eventId"`
	ErrorCode   string                   `json:"errorCode"`
	ErrorMsg    string                   `json:"errorMsg"`
	Recoverable aggregate.Recoverability `json:"recoverable"`
	Retries     int32                    `json:"retries"`
	MaxRetries  int32                    `json:"maxRetries"`
	NextRetryAt int64                    `json:"nextRetryAt"`
}

// RecordLink returns the dashboard page of record id under publicURL, or
// "" without a public URL.
func RecordLink(publicURL, id string) string {
	if publicURL == "" || id == "" {
		return ""
	}
	return publicURL + "/record?id=" + url.QueryEscape(id)
}

// genericBody returns the generic body of n.
func genericBody(n *Notification, publicURL string) Body {
	b := Body{ID: n.ID, Type: n.Type, Time: n.Time, TraceID: n.TraceID, Batch: n.Batch, Digest: n.Digest, Circuit: n.Circuit}
	if s := n.Record; s != nil {
		b.Link = RecordLink(publicURL, s.ID)
		b.Record = &BodyRecord{
			ID: s.ID, Version: n.Version, Status: s.Status, Function: s.Function, EventID: s.EventID,
			ErrorCode: s.Error.ErrorCode, ErrorMsg: clip(s.Error.ErrorMsg, maxErrorMsg), Recoverable: s.Recoverable,
			Retries: s.RetryState.Retries, MaxRetries: s.RetrySpec.MaxRetries, NextRetryAt: s.RetryState.NextRetryAt,
		}
	}
	return b
}

// slackBody is an incoming-webhook message: text plus blocks.
type slackBody struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

var titles = map[string]string{
	TypeCreated: "Failure recorded", TypePrepared: "Compensation prepared", TypeApplied: "Failed again",
	TypeSucceeded: "Compensation succeeded", TypeRecoverableMarked: "Recoverability changed",
	TypeFunctionChanged: "Function changed", TypeRetriesExhausted: "No automatic retry left",
	TypeBatchCompleted: "Batch finished", TypeDigest: "Failure digest", TypeTest: "Test notification",
}

// slack returns the Slack-compatible body of n.
func slack(n *Notification, publicURL string) slackBody {
	title := titles[n.Type]
	var detail, context []string
	switch {
	case n.Circuit != nil:
		title = circuitTitle(n)
		detail = append(detail, slackEscape(circuitDetail(n.Circuit)))
	case n.Record != nil:
		s := n.Record
		f := s.Function
		title += ": " + f.ProcessorName + "/" + f.Name
		detail = append(detail, fmt.Sprintf("*%s* `%s` %s", slackEscape(s.Error.ErrorCode), s.Status, slackEscape(clip(s.Error.ErrorMsg, 300))))
		context = append(context, fmt.Sprintf("record %s · retries %d/%d · %s", slackEscape(s.ID), s.RetryState.Retries, s.RetrySpec.MaxRetries, s.Recoverable))
		if link := RecordLink(publicURL, s.ID); link != "" {
			context = append(context, "<"+slackEscape(link)+"|open the record>")
		}
	case n.Batch != nil:
		b := n.Batch
		title += ": " + b.Command
		detail = append(detail, fmt.Sprintf("request %s: %d matched, complete %t, %v", slackEscape(b.RequestID), b.Matched, b.Complete, b.Counts))
	case len(n.Digest) > 0:
		for _, g := range n.Digest {
			detail = append(detail, fmt.Sprintf("• *%s* %s `%s`: %d failures, %d successes", g.State, slackEscape(g.Function), slackEscape(g.ErrorCode), g.Failures, g.Successes))
		}
	}
	body := slackBody{Text: slackEscape(title), Blocks: []slackBlock{{Type: "section", Text: &slackText{Type: "mrkdwn", Text: "*" + slackEscape(title) + "*"}}}}
	if len(detail) > 0 {
		body.Blocks = append(body.Blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: clip(strings.Join(detail, "\n"), 2900)}})
	}
	if len(context) > 0 {
		el := make([]slackText, 0, len(context))
		for _, c := range context {
			el = append(el, slackText{Type: "mrkdwn", Text: c})
		}
		body.Blocks = append(body.Blocks, slackBlock{Type: "context", Elements: el})
	}
	return body
}

// encodeBody renders n in format.
func encodeBody(n *Notification, format, publicURL string) ([]byte, error) {
	if format == FormatSlack {
		return json.Marshal(slack(n, publicURL))
	}
	return json.Marshal(genericBody(n, publicURL))
}
