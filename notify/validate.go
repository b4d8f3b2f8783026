package notify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/amends-dev/amends/internal/bounds"
)

// validate applies the defaults and checks every field of c, loading the
// endpoints' secrets; the error names the field and its rule.
func (c *Config) validate(env Environment) error {
	if err := c.validateHosts(); err != nil {
		return err
	}
	names, err := c.validateEndpoints(env)
	if err != nil {
		return err
	}
	if err := c.validateRules(names); err != nil {
		return err
	}
	if c.DedupWindow == nil {
		c.DedupWindow = &Duration{DefaultDedupWindow}
	}
	if w := c.DedupWindow.Duration; w < 0 || w > MaxDedupWindow {
		return fmt.Errorf("dedupWindow: %s is outside 0s to %s", w, MaxDedupWindow)
	}
	if err := c.Retry.validate(); err != nil {
		return fmt.Errorf("retry.%w", err)
	}
	if d := c.Digest; d != nil {
		if d.Endpoint == "" {
			d.Endpoint = c.DefaultEndpoint
		}
		if !names[d.Endpoint] {
			return fmt.Errorf("digest.endpoint: %q is not the name of an endpoint", d.Endpoint)
		}
		if !bounds.Within(d.Interval.Duration, time.Minute, 24*time.Hour) {
			return fmt.Errorf("digest.interval: %s is outside 1m to 24h", d.Interval.Duration)
		}
	}
	return nil
}

// validateHosts checks publicUrl and allowHosts.
func (c *Config) validateHosts() error {
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(c.PublicURL) > MaxURLLength {
			return fmt.Errorf("publicUrl: want an http or https URL without user info, at most %d characters", MaxURLLength)
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	if len(c.AllowHosts) > MaxAllowHosts {
		return fmt.Errorf("allowHosts: %d hosts, more than the limit of %d", len(c.AllowHosts), MaxAllowHosts)
	}
	for i, h := range c.AllowHosts {
		if h == "" || len(h) > 253 || strings.ContainsAny(h, ":/ *?@") {
			return fmt.Errorf("allowHosts[%d]: want a host name without port, wildcard or scheme, at most 253 characters", i)
		}
	}
	return nil
}

// validateEndpoints checks the endpoints and defaultEndpoint (the only
// endpoint by default) and returns the endpoints' names.
func (c *Config) validateEndpoints(env Environment) (map[string]bool, error) {
	if len(c.Endpoints) == 0 {
		return nil, errors.New("endpoints: at least one endpoint is needed")
	}
	if len(c.Endpoints) > MaxEndpoints {
		return nil, fmt.Errorf("endpoints: %d endpoints, more than the limit of %d", len(c.Endpoints), MaxEndpoints)
	}
	names := map[string]bool{}
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		if err := e.validate(env); err != nil {
			return nil, fmt.Errorf("endpoints[%d].%w", i, err)
		}
		if names[e.Name] {
			return nil, fmt.Errorf("endpoints[%d].name: %q is used twice", i, e.Name)
		}
		names[e.Name] = true
	}
	if c.DefaultEndpoint == "" && len(c.Endpoints) == 1 {
		c.DefaultEndpoint = c.Endpoints[0].Name
	}
	if c.DefaultEndpoint != "" && !names[c.DefaultEndpoint] {
		return nil, fmt.Errorf("defaultEndpoint: %q is not the name of an endpoint", c.DefaultEndpoint)
	}
	return names, nil
}

// validateRules checks the rules (every event to the default endpoint if
// there are none), each naming one of the endpoints names.
func (c *Config) validateRules(names map[string]bool) error {
	if len(c.Rules) > MaxRules {
		return fmt.Errorf("rules: %d rules, more than the limit of %d", len(c.Rules), MaxRules)
	}
	if len(c.Rules) == 0 {
		if c.DefaultEndpoint == "" {
			return errors.New("defaultEndpoint: without rules, name the endpoint that gets every notification")
		}
		c.Rules = []Rule{{Events: DefaultEvents}}
	}
	for i := range c.Rules {
		r := &c.Rules[i]
		for j, ev := range r.Events {
			if !slices.Contains(EventTypes, ev) {
				return fmt.Errorf("rules[%d].events[%d]: %q is not one of %s", i, j, ev, strings.Join(EventTypes, ", "))
			}
		}
		for field, v := range map[string]string{"processor": r.Processor, "function": r.Function, "errorCode": r.ErrorCode} {
			if len(v) > 256 {
				return fmt.Errorf("rules[%d].%s: longer than the limit of 256 characters", i, field)
			}
		}
		if r.Endpoint == "" {
			r.Endpoint = c.DefaultEndpoint
		}
		if r.Endpoint == "" {
			return fmt.Errorf("rules[%d].endpoint: empty, and there is no defaultEndpoint", i)
		}
		if !names[r.Endpoint] {
			return fmt.Errorf("rules[%d].endpoint: %q is not the name of an endpoint", i, r.Endpoint)
		}
	}
	return nil
}

func (e *Endpoint) validate(env Environment) error {
	if !nameRE.MatchString(e.Name) {
		return fmt.Errorf("name: %q must be 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit", clip(e.Name, 64))
	}
	if err := checkEndpointURL(e.URL); err != nil {
		return err
	}
	switch e.Format {
	case "":
		e.Format = FormatJSON
	case FormatJSON, FormatSlack:
	default:
		return fmt.Errorf("format: %q is not json or slack", clip(e.Format, 32))
	}
	if err := e.checkSuccessStatus(); err != nil {
		return err
	}
	if e.Timeout == nil {
		e.Timeout = &Duration{DefaultTimeout}
	}
	if t := e.Timeout.Duration; t < time.Second || t > time.Minute {
		return fmt.Errorf("timeout: %s is outside 1s to 1m", t)
	}
	if len(e.Secrets) < 1 || len(e.Secrets) > 2 {
		return fmt.Errorf("secrets: %d secrets; want 1, or 2 while rotating", len(e.Secrets))
	}
	e.secrets = e.secrets[:0]
	for i, ref := range e.Secrets {
		s, err := ref.load(env)
		if err != nil {
			return fmt.Errorf("secrets[%d].%w", i, err)
		}
		e.secrets = append(e.secrets, s)
	}
	return nil
}

func (r SecretRef) load(env Environment) ([]byte, error) {
	var raw []byte
	switch {
	case (r.File == "") == (r.Env == ""):
		return nil, errors.New("file: set exactly one of file and env")
	case r.File != "":
		f, err := os.Open(r.File)
		if err != nil {
			return nil, fmt.Errorf("file: cannot open %s: %w", r.File, errors.Unwrap(err))
		}
		defer f.Close()
		raw, err = io.ReadAll(io.LimitReader(f, MaxSecretLength+2))
		if err != nil {
			return nil, fmt.Errorf("file: cannot read %s", r.File)
		}
	default:
		if env == nil {
			env = os.LookupEnv
		}
		v, ok := env(r.Env)
		if !ok || v == "" {
			return nil, fmt.Errorf("env: the variable %s is not set", r.Env)
		}
		raw = []byte(v)
	}
	raw = bytes.TrimRight(raw, "\r\n")
	if len(raw) < MinSecretLength || len(raw) > MaxSecretLength {
		what := "file"
		if r.Env != "" {
			what = "env"
		}
		return nil, fmt.Errorf("%s: the secret has %d bytes; want %d to %d", what, len(raw), MinSecretLength, MaxSecretLength)
	}
	return raw, nil
}

// checkEndpointURL checks an endpoint's URL: absolute http or https,
// within MaxURLLength, without user info or fragment.
func checkEndpointURL(raw string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("url: longer than the limit of %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return errors.New("url: want an absolute http or https URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("url: scheme %q; only http and https are allowed", u.Scheme)
	case u.User != nil:
		return errors.New("url: must not contain user info (a secret never goes in a URL: use secrets)")
	case u.Fragment != "":
		return errors.New("url: must not have a fragment")
	}
	return nil
}

// checkSuccessStatus checks the endpoint's range of success statuses, by
// default 200 to 299.
func (e *Endpoint) checkSuccessStatus() error {
	switch len(e.SuccessStatus) {
	case 0:
		e.SuccessStatus = []int{200, 299}
	case 2:
		lo, hi := e.SuccessStatus[0], e.SuccessStatus[1]
		if lo < 100 || hi > 599 || lo > hi {
			return fmt.Errorf("successStatus: [%d, %d] must be a range within 100 to 599, low first", lo, hi)
		}
	default:
		return errors.New("successStatus: want [low, high], two status codes")
	}
	return nil
}
