package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

// A message the projector cannot project is listed by `amends quarantine
// list`, with its stream, sequence, subject, consumer and reason.
func TestQuarantineList(t *testing.T) {
	e := newAPIEnv(t)
	e.create(t, 1)
	subject := e.store.FilterSubject(aggregate.Context, aggregate.AggregateType)
	for _, s := range []string{"poison-1", "poison-2"} {
		_, err := e.js.Publish(t.Context(), strings.TrimSuffix(subject, ">")+s, []byte("not a stream:\t"+s))
		require.NoError(t, err)
	}
	e.create(t, 2) // behind the poison: projected

	var c *cli
	var page listJSON[api.QuarantineEntry]
	require.Eventually(t, func() bool {
		c = e.cli(viewerKey)
		page = listJSON[api.QuarantineEntry]{}
		return c.run(t, "quarantine", "list", "-o", "json", "--limit", "1", "--all") == exitOK &&
			json.Unmarshal([]byte(c.stdout.String()), &page) == nil && len(page.Items) == 2
	}, 30*time.Second, 10*time.Millisecond, "both poison messages listed, one page at a time")
	assert.Empty(t, page.Next)
	for _, en := range page.Items {
		assert.Equal(t, projection.DefaultDurable, en.Consumer)
		assert.Equal(t, api.QuarantineUndecodable, en.Reason)
		assert.Equal(t, e.store.StreamName(aggregate.Context), en.Stream)
		assert.NotZero(t, en.Seq)
	}

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "quarantine", "list", "--limit", "1"), c.stderr.String())
	out := c.stdout.String()
	assert.Regexp(t, `^QUARANTINED +CONSUMER +REASON +STREAM +SEQ +SUBJECT +DELIVERIES +ERROR\n`, out)
	assert.Regexp(t, `amends-views +undecodable +AMENDS_compensation +\d+ +\S+poison-\d +1 +message \d`, out)
	assert.Contains(t, out, "more: --cursor ", "the next page's cursor")
	assert.Equal(t, 3, strings.Count(out, "\n"), "a header, one entry and the cursor: %s", out)

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "quarantine", "list", "--consumer", "amends_replay_orders"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "nothing quarantined by amends_replay_orders")

	for _, args := range [][]string{{"--limit", "0"}, {"--limit", "501"}, {"--cursor", "abc"}} {
		c = e.cli(viewerKey)
		assert.Equal(t, exitUsage, c.run(t, append([]string{"quarantine", "list"}, args...)...), "%v is a usage error", args)
		assert.Contains(t, c.stderr.String(), strings.TrimPrefix(args[0], "")+" ", "the error names the flag")
	}
	c = e.cli(viewerKey)
	assert.NotEqual(t, exitOK, c.run(t, "quarantine", "list", "--consumer", "a.b"))
	assert.Contains(t, c.stderr.String(), "consumer")
}

func TestQuarantineCellsStayOnOneLine(t *testing.T) {
	assert.Equal(t, "a b c", cell("a\tb\nc", 10))
	assert.Equal(t, "ab…", cell("abé", 3), "cut on a rune boundary")
	assert.Equal(t, "abc", cell("abc", 3))
}
