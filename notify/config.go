package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Limits of a notification config.
const (
	MaxConfigSize   = 1 << 20
	MaxEndpoints    = 32
	MaxRules        = 256
	MaxAllowHosts   = 64
	MaxURLLength    = 2048
	MinSecretLength = 16
	MaxSecretLength = 4096
	MaxDedupWindow  = 24 * time.Hour
	MaxAttempts     = 20
)

// Defaults of a notification config.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultDedupWindow = 10 * time.Minute
	DefaultAttempts    = 5
	DefaultFirstDelay  = time.Second
	DefaultMaxDelay    = 30 * time.Second
)

// DefaultEvents are the event types notified when a config has no rules.
var DefaultEvents = []string{TypeCreated, TypeApplied, TypeRetriesExhausted, TypeBatchCompleted}

// Config is the notification config: a JSON file (see
// docs/notifications.md), read strictly by ParseConfig. Zero fields take
// the documented defaults.
type Config struct {
	// PublicURL is the dashboard's base URL; bodies then link to
	// PublicURL + "/record?id={id}", the dashboard's record page.
	PublicURL string `json:"publicUrl,omitempty"`
	// AllowHosts are host names (exact match) the SSRF guard lets reach
	// any address: trusted internal receivers.
	AllowHosts []string `json:"allowHosts,omitempty"`
	// DefaultEndpoint names the endpoint of rules without one.
	DefaultEndpoint string `json:"defaultEndpoint,omitempty"`
	// Endpoints are the receivers.
	Endpoints []Endpoint `json:"endpoints"`
	// Rules select what is notified where; none: DefaultEvents to the
	// default endpoint.
	Rules []Rule `json:"rules,omitempty"`
	// DedupWindow is how long one dedup key sends only one notification
	// per endpoint (default 10m, at most 24h; "0s" turns it off).
	DedupWindow *Duration `json:"dedupWindow,omitempty"`
	// Retry is the delivery retry policy.
	Retry RetryPolicy `json:"retry,omitzero"`
	// Digest, when set, sends a digest per function × error code.
	Digest *DigestConfig `json:"digest,omitempty"`
}

// Endpoint is one receiver.
type Endpoint struct {
	// Name identifies the endpoint in rules, metrics and logs.
	Name string `json:"name"`
	// URL is where notifications are POSTed (http or https, no user info).
	URL string `json:"url"`
	// Format is "json" (default) or "slack".
	Format string `json:"format,omitempty"`
	// Secrets are one or two HMAC secrets (two while rotating); each is
	// read from a file or an environment variable, never written inline.
	Secrets []SecretRef `json:"secrets"`
	// SuccessStatus is the inclusive range of answers that count as
	// delivered (default [200, 299]).
	SuccessStatus []int `json:"successStatus,omitempty"`
	// Timeout bounds one request (default 10s, 1s to 60s).
	Timeout *Duration `json:"timeout,omitempty"`

	secrets [][]byte
}

// SecretRef names where a secret is: exactly one of File and Env.
type SecretRef struct {
	File string `json:"file,omitempty"`
	Env  string `json:"env,omitempty"`
}

// Rule selects notifications: every field left empty matches anything.
type Rule struct {
	Events    []string `json:"events,omitempty"`
	Processor string   `json:"processor,omitempty"`
	Function  string   `json:"function,omitempty"`
	ErrorCode string   `json:"errorCode,omitempty"`
	// Endpoint receives the matches (default: DefaultEndpoint).
	Endpoint string `json:"endpoint,omitempty"`
}

// RetryPolicy is how often and how fast a delivery is retried: attempts in
// all, waiting first, doubling up to max, each wait jittered by ±20 %.
type RetryPolicy struct {
	Attempts int       `json:"attempts,omitempty"`
	First    *Duration `json:"first,omitempty"`
	Max      *Duration `json:"max,omitempty"`
}

// DigestConfig configures the digests.
type DigestConfig struct {
	// Endpoint receives the digests (default: DefaultEndpoint).
	Endpoint string `json:"endpoint,omitempty"`
	// Interval is the least time between two digests (1m to 24h).
	Interval Duration `json:"interval"`
}

// Duration is a time.Duration written as a Go duration string ("10s").
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("want a duration string such as \"10s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"10s\"", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Environment looks up an environment variable; os.LookupEnv satisfies it.
type Environment func(string) (string, bool)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// LoadConfig reads and validates the config file at path, reading the
// endpoints' secrets from files and env. Errors wrap ErrInvalidConfig and
// name the file and the field; they never contain a secret.
func LoadConfig(path string, env Environment) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w: %w", path, errors.Unwrap(err), ErrInvalidConfig)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w: %w", path, errors.Unwrap(err), ErrInvalidConfig)
	}
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes: %w", path, MaxConfigSize, ErrInvalidConfig)
	}
	c, err := ParseConfig(data, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes data strictly (unknown fields, trailing data and
// wrong types are errors), applies defaults, validates every field and
// loads the secrets. Errors wrap ErrInvalidConfig.
func ParseConfig(data []byte, env Environment) (*Config, error) {
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("the config is larger than the limit of %d bytes: %w", MaxConfigSize, ErrInvalidConfig)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonProblem(err), ErrInvalidConfig)
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the config's JSON object: %w", ErrInvalidConfig)
	}
	if err := c.validate(env); err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrInvalidConfig)
	}
	return &c, nil
}

// jsonProblem describes a decoding error without Go type names.
func jsonProblem(err error) string {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		return fmt.Sprintf("%s: want a %s, got a JSON %s", ute.Field, jsonKind(ute.Type.Kind().String()), ute.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the config is empty or cut short"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(k string) string {
	switch k {
	case "slice", "array":
		return "list"
	case "struct", "map", "ptr":
		return "object"
	case "int", "int32", "int64":
		return "number"
	}
	return k
}

// Endpoint returns the endpoint named name, or false.
func (c *Config) Endpoint(name string) (*Endpoint, bool) {
	for i := range c.Endpoints {
		if c.Endpoints[i].Name == name {
			return &c.Endpoints[i], true
		}
	}
	return nil, false
}

// SecretCount returns how many secrets the endpoint signs with.
func (e *Endpoint) SecretCount() int { return len(e.secrets) }

// WithSecrets returns a copy of e that signs with secrets (tests, and
// endpoints built from flags).
func (e Endpoint) WithSecrets(secrets ...[]byte) Endpoint {
	e.secrets = secrets
	return e
}

// succeeded reports whether status is in the endpoint's success range.
func (e *Endpoint) succeeded(status int) bool {
	return status >= e.SuccessStatus[0] && status <= e.SuccessStatus[1]
}

// routes returns the endpoints n goes to, each once, in config order.
func (c *Config) routes(n *Notification) []string {
	var out []string
	for i := range c.Rules {
		r := &c.Rules[i]
		if slices.Contains(out, r.Endpoint) || !r.matches(n) {
			continue
		}
		out = append(out, r.Endpoint)
	}
	return out
}

func (r *Rule) matches(n *Notification) bool {
	if len(r.Events) > 0 && !slices.Contains(r.Events, n.Type) {
		return false
	}
	f := n.Function()
	return (r.Processor == "" || r.Processor == f.ProcessorName) &&
		(r.Function == "" || r.Function == f.Name) &&
		(r.ErrorCode == "" || r.ErrorCode == n.ErrorCode())
}

// String describes e without its secrets.
func (e Endpoint) String() string {
	return fmt.Sprintf("endpoint %s (%s, %d secrets)", e.Name, e.Format, len(e.secrets))
}

// GoString is String: %#v never shows a secret either.
func (e Endpoint) GoString() string { return e.String() }
