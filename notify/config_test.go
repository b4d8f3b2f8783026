package notify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodSecret = "s3cret-value-0123456789"

func envOf(vars map[string]string) Environment {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseConfigDefaultsAndSecrets(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte("file-secret-0123456789\n"), 0o600))
	c, err := ParseConfig([]byte(`{
		"publicUrl": "https://amends.example.com/",
		"endpoints": [
			{"name": "ops", "url": "https://hooks.example.com/a?b=c", "secrets": [{"env": "NEW"}, {"file": "`+file+`"}]},
			{"name": "chat", "url": "https://slack.example.com/x", "format": "slack", "secrets": [{"env": "NEW"}], "successStatus": [200, 204], "timeout": "3s"}
		],
		"defaultEndpoint": "ops",
		"rules": [{"events": ["retries_exhausted"], "processor": "orders", "endpoint": "chat"}, {"errorCode": "Timeout"}],
		"digest": {"interval": "1h"}
	}`), envOf(map[string]string{"NEW": goodSecret}))
	require.NoError(t, err)
	assert.Equal(t, "https://amends.example.com", c.PublicURL)
	ops, _ := c.Endpoint("ops")
	assert.Equal(t, [][]byte{[]byte(goodSecret), []byte("file-secret-0123456789")}, ops.secrets, "two secrets, the file's newline trimmed")
	assert.Equal(t, FormatJSON, ops.Format)
	assert.Equal(t, []int{200, 299}, ops.SuccessStatus)
	assert.Equal(t, DefaultTimeout, ops.Timeout.Duration)
	assert.Equal(t, DefaultDedupWindow, c.DedupWindow.Duration)
	assert.Equal(t, DefaultAttempts, c.Retry.Attempts)
	assert.Equal(t, "ops", c.Rules[1].Endpoint, "a rule without endpoint uses the default")
	assert.Equal(t, "ops", c.Digest.Endpoint)
}

func TestParseConfigRoutes(t *testing.T) {
	c, err := ParseConfig([]byte(`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S"}]},
		{"name": "b", "url": "https://b.example.com", "secrets": [{"env": "S"}]}],
		"defaultEndpoint": "a",
		"rules": [{"events": ["created"], "processor": "orders"}, {"errorCode": "Timeout", "endpoint": "b"}, {"events": ["applied"], "function": "ship", "endpoint": "b"}]}`),
		envOf(map[string]string{"S": goodSecret}))
	require.NoError(t, err)
	note := func(typ, proc, fn, code string) *Notification {
		s := &aggregate.State{}
		s.Function.ProcessorName, s.Function.Name, s.Error.ErrorCode = proc, fn, code
		return &Notification{Type: typ, Record: s}
	}
	assert.Equal(t, []string{"a"}, c.routes(note("created", "orders", "x", "Boom")))
	assert.Empty(t, c.routes(note("created", "billing", "x", "Boom")), "no rule matches another processor's creation")
	assert.Equal(t, []string{"a", "b"}, c.routes(note("created", "orders", "x", "Timeout")), "every matching endpoint, each once")
	assert.Equal(t, []string{"b"}, c.routes(note("applied", "billing", "ship", "Boom")))

	d, err := ParseConfig([]byte(`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S"}]}]}`), envOf(map[string]string{"S": goodSecret}))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, d.routes(note(TypeRetriesExhausted, "p", "f", "c")), "without rules the default events go to the only endpoint")
	assert.Empty(t, d.routes(note(TypePrepared, "p", "f", "c")), "prepared is not a default event")
}

func TestParseConfigRefuses(t *testing.T) {
	ep := func(extra string) string {
		return `{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S"}]` + extra + `}]`
	}
	for name, tc := range map[string]struct{ config, want string }{
		"unknown field":       {`{"endpoints": [], "bogus": 1}`, `unknown field "bogus"`},
		"wrong type":          {`{"endpoints": {"a": 1}}`, "endpoints: want a list"},
		"trailing data":       {ep("") + `} {}`, "data after"},
		"no endpoint":         {`{"endpoints": []}`, "endpoints: at least one"},
		"bad name":            {`{"endpoints": [{"name": "A B", "url": "https://a.example.com", "secrets": [{"env": "S"}]}]}`, "endpoints[0].name"},
		"bad scheme":          {`{"endpoints": [{"name": "a", "url": "gopher://a.example.com/", "secrets": [{"env": "S"}]}]}`, `endpoints[0].url: scheme "gopher"`},
		"user info":           {`{"endpoints": [{"name": "a", "url": "https://u:p@a.example.com", "secrets": [{"env": "S"}]}]}`, "endpoints[0].url: must not contain user info"},
		"three secrets":       {`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S"}, {"env": "S"}, {"env": "S"}]}]}`, "endpoints[0].secrets: 3 secrets; want 1, or 2"},
		"secret unset":        {`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "NOPE"}]}]}`, "endpoints[0].secrets[0].env: the variable NOPE is not set"},
		"secret short":        {`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "SHORT"}]}]}`, "the secret has 5 bytes; want 16 to 4096"},
		"file and env":        {`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S", "file": "/x"}]}]}`, "set exactly one of file and env"},
		"timeout":             {ep(`, "timeout": "2m"`) + `}`, "endpoints[0].timeout: 2m0s is outside 1s to 1m"},
		"status":              {ep(`, "successStatus": [300, 200]`) + `}`, "endpoints[0].successStatus: [300, 200]"},
		"format":              {ep(`, "format": "xml"`) + `}`, `endpoints[0].format: "xml" is not json or slack`},
		"window":              {ep("") + `, "dedupWindow": "48h"}`, "dedupWindow: 48h0m0s is outside 0s to 24h0m0s"},
		"attempts":            {ep("") + `, "retry": {"attempts": 50}}`, "retry.attempts: 50 is outside 1 to 20"},
		"event":               {ep("") + `, "rules": [{"events": ["exploded"]}]}`, `rules[0].events[0]: "exploded" is not one of`},
		"rule endpoint":       {ep("") + `, "rules": [{"endpoint": "zz"}]}`, `rules[0].endpoint: "zz" is not the name of an endpoint`},
		"digest interval":     {ep("") + `, "digest": {"interval": "1s"}}`, "digest.interval: 1s is outside 1m to 24h"},
		"allow host wildcard": {ep("") + `, "allowHosts": ["*.internal"]}`, "allowHosts[0]"},
		"bad duration":        {ep(`, "timeout": "soon"`) + `}`, `"soon" is not a duration`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.config), envOf(map[string]string{"S": goodSecret, "SHORT": "short"}))
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), goodSecret)
			assert.NotContains(t, err.Error(), "json:", "no Go package prefix")
			assert.False(t, strings.Contains(err.Error(), "notify."), "no Go type names")
		})
	}
	big := make([]byte, MaxConfigSize+1)
	_, err := ParseConfig(big, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	assert.Contains(t, err.Error(), "larger than the limit")
}

func TestRetryDelayIsCappedAndJittered(t *testing.T) {
	p := RetryPolicy{}
	require.NoError(t, p.validate())
	half := func() float64 { return 0.5 }
	assert.Equal(t, time.Second, p.delay(1, half))
	assert.Equal(t, 4*time.Second, p.delay(3, half))
	assert.Equal(t, 30*time.Second, p.delay(10, half), "capped at max")
	assert.Equal(t, 800*time.Millisecond, p.delay(1, func() float64 { return 0 }), "jitter -20 %")
	assert.Equal(t, 36*time.Second, p.delay(10, func() float64 { return 1 }), "jitter +20 %")
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	c, err := ParseConfig([]byte(`{"endpoints": [{"name": "a", "url": "https://a.example.com", "secrets": [{"env": "S"}]}]}`), envOf(map[string]string{"S": goodSecret}))
	require.NoError(t, err)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, c) + fmt.Sprintf(verb, *c) + fmt.Sprintf(verb, c.Endpoints)
		assert.NotContains(t, out, goodSecret, verb)
		assert.NotContains(t, out, fmt.Sprint([]byte(goodSecret)), verb)
	}
	assert.Contains(t, fmt.Sprint(c.Endpoints[0]), "endpoint a (json, 1 secrets)")
}
