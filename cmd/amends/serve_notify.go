package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/notify"
	"github.com/amends-dev/amends/quarantine"
)

// notifyHelp explains the notification flags in serve's help.
const notifyHelp = `Notifications: with --notify-config (a JSON file of endpoints, rules,
dedup window, retries and digests; see docs/notifications.md), or with
--notify-url and --notify-secret-env or --notify-secret-file for one
endpoint, serve POSTs signed webhooks for record events. Secrets are read
from files or environment variables, never from flags.`

// notifyFlags are the notification flags of serve and amends notify.
type notifyFlags struct {
	configFile  string
	url         string
	secretEnv   []string
	secretFile  []string
	format      string
	allowHosts  []string
	publicURL   string
	dedupWindow time.Duration
}

func (f *notifyFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.configFile, "notify-config", "", "JSON file of notification endpoints and rules (see docs/notifications.md)")
	fs.StringVar(&f.url, "notify-url", "", "one notification endpoint (http or https), instead of --notify-config")
	fs.StringSliceVar(&f.secretEnv, "notify-secret-env", nil, "environment variable holding the --notify-url endpoint's HMAC secret (twice while rotating)")
	fs.StringSliceVar(&f.secretFile, "notify-secret-file", nil, "file holding the --notify-url endpoint's HMAC secret (twice while rotating)")
	fs.StringVar(&f.format, "notify-format", "json", "body of the --notify-url endpoint: json or slack")
	fs.StringSliceVar(&f.allowHosts, "notify-allow-host", nil, "host name (exact) a notification may reach on a private or loopback address; repeatable")
	fs.StringVar(&f.publicURL, "notify-public-url", "", "the dashboard's public base URL; notifications link to its record page, /record?id={id}")
	fs.DurationVar(&f.dedupWindow, "notify-dedup-window", notify.DefaultDedupWindow, "the --notify-url endpoint's dedup window, 0 to 24h (0 turns dedup off)")
}

// config returns the notification config the flags describe, or nil if
// notifications are off. Every problem is a usage error naming the flag or
// the file's field.
func (f *notifyFlags) config(fs *pflag.FlagSet, env notify.Environment) (*notify.Config, error) {
	changed := func(name string) bool { return fs.Lookup(name) != nil && fs.Lookup(name).Changed }
	if f.configFile != "" && f.url != "" {
		return nil, usageErrorf("--notify-config and --notify-url both configure notifications: use one of them")
	}
	if f.configFile == "" && f.url == "" {
		return nil, f.checkUnused(changed)
	}
	if f.configFile != "" {
		for _, name := range []string{"notify-secret-env", "notify-secret-file", "notify-format", "notify-dedup-window"} {
			if changed(name) {
				return nil, usageErrorf("--%s configures the --notify-url endpoint; with --notify-config, set it in the file", name)
			}
		}
		c, err := notify.LoadConfig(f.configFile, env)
		if err != nil {
			return nil, notifyConfigError("--notify-config: ", err.Error(), err)
		}
		if err := f.overrides(c); err != nil {
			return nil, err
		}
		return c, nil
	}
	return f.urlConfig(env)
}

// overrides applies --notify-allow-host and --notify-public-url.
func (f *notifyFlags) overrides(c *notify.Config) error {
	if len(f.allowHosts) > 0 || f.publicURL != "" {
		// Validated by the same rules as the file's fields.
		doc, _ := json.Marshal(map[string]any{"allowHosts": f.allowHosts, "publicUrl": f.publicURL,
			"endpoints": []any{map[string]any{"name": "x", "url": "https://x.invalid", "secrets": []any{map[string]string{"env": "X"}}}}})
		probe, err := notify.ParseConfig(doc, func(string) (string, bool) { return "0123456789abcdef0123", true })
		if err != nil {
			msg := strings.NewReplacer("allowHosts", "--notify-allow-host", "publicUrl", "--notify-public-url").Replace(err.Error())
			return notifyConfigError("", msg, err)
		}
		c.AllowHosts = append(c.AllowHosts, probe.AllowHosts...)
		if probe.PublicURL != "" {
			c.PublicURL = probe.PublicURL
		}
	}
	return nil
}

// flagFields finds the config fields that the --notify-url flags set.
var flagFields = regexp.MustCompile(`(endpoints\[0\]\.secrets\[\d+\]\.env|endpoints\[0\]\.secrets\[\d+\]\.file|endpoints\[0\]\.url|endpoints\[0\]\.format|endpoints\[0\]\.secrets|dedupWindow)`)

var flagOf = map[string]string{"endpoints[0].url": "--notify-url", "endpoints[0].format": "--notify-format",
	"endpoints[0].secrets": "--notify-secret-env and --notify-secret-file", "dedupWindow": "--notify-dedup-window"}

func init() {
	for i := range 8 {
		flagOf[fmt.Sprintf("endpoints[0].secrets[%d].env", i)] = "--notify-secret-env"
		flagOf[fmt.Sprintf("endpoints[0].secrets[%d].file", i)] = "--notify-secret-file"
	}
}

// notifyConfigError makes the message msg of a config error err a usage
// error, without the sentinel's text.
func notifyConfigError(prefix, msg string, err error) error {
	msg = strings.TrimSuffix(msg, ": "+notify.ErrInvalidConfig.Error())
	if errors.Is(err, notify.ErrInvalidConfig) {
		return usageErrorf("%s%s", prefix, msg)
	}
	return errors.New(prefix + msg)
}

// notifierComponents returns the notifier as a component of serve and
// registers its metrics, or nothing when notifications are off.
func notifierComponents(cfg serveConfig, js jetstream.JetStream, store *jsstore.Store, svc *aggregate.Service, quar *quarantine.Quarantine, reg *prometheus.Registry, logger *slog.Logger) ([]component, error) {
	if cfg.notify == nil {
		return nil, nil
	}
	n, err := notify.New(js, store, svc, cfg.notify, notify.WithLogger(logger.With("component", "notifier")),
		notify.WithQuarantine(quar), notify.WithBuckets(cfg.replicas, cfg.storage))
	if err != nil {
		return nil, err
	}
	reg.MustRegister(n.Metrics())
	logger.Info("notifications on", "endpoints", len(cfg.notify.Endpoints), "rules", len(cfg.notify.Rules), "dedup_window", cfg.notify.DedupWindow.Duration)
	return []component{{"notifier", n.Run}}, nil
}

// urlConfig is the configuration of the one --notify-url endpoint.
func (f *notifyFlags) urlConfig(env notify.Environment) (*notify.Config, error) {
	type ref struct {
		File string `json:"file,omitempty"`
		Env  string `json:"env,omitempty"`
	}
	var secrets []ref
	for _, e := range f.secretEnv {
		secrets = append(secrets, ref{Env: e})
	}
	for _, p := range f.secretFile {
		secrets = append(secrets, ref{File: p})
	}
	if len(secrets) == 0 {
		return nil, usageErrorf("--notify-url needs its secret: --notify-secret-env NAME or --notify-secret-file FILE")
	}
	doc, _ := json.Marshal(map[string]any{
		"endpoints":   []any{map[string]any{"name": "default", "url": f.url, "format": f.format, "secrets": secrets}},
		"dedupWindow": f.dedupWindow.String(),
	})
	c, err := notify.ParseConfig(doc, env)
	if err != nil {
		return nil, notifyConfigError("", flagFields.ReplaceAllStringFunc(err.Error(), func(m string) string {
			return flagOf[flagFields.FindStringSubmatch(m)[1]]
		}), err)
	}
	if err := f.overrides(c); err != nil {
		return nil, err
	}
	return c, nil
}

// checkUnused refuses the endpoint's flags without an endpoint
// (--notify-config or --notify-url).
func (f *notifyFlags) checkUnused(changed func(string) bool) error {
	for _, name := range []string{"notify-secret-env", "notify-secret-file", "notify-format", "notify-dedup-window"} {
		if changed(name) {
			return usageErrorf("--%s configures the --notify-url endpoint: set --notify-url too", name)
		}
	}
	if changed("notify-allow-host") || changed("notify-public-url") {
		return usageErrorf("--notify-allow-host and --notify-public-url need --notify-config or --notify-url")
	}
	return nil
}
