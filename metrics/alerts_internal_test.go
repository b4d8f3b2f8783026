package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// alertRules is the Prometheus rule file format.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var (
	yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	metricRef = regexp.MustCompile(`\bamends_[a-z0-9_]+`)
	// selector is a metric with its label matchers, e.g. m{a="x",b=~"y"}.
	selector = regexp.MustCompile(`\b(amends_[a-z0-9_]+)\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	byClause = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	varLabel = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	descName = regexp.MustCompile(`fqName: "([^"]+)"`)
)

// registered returns every metric amends registers, control plane and
// service side, with its variable labels.
func registered() map[string][]string {
	cs := []prometheus.Collector{
		Records(nil), Projector(nil), Quarantine(), schedulerCollector(nil, nil, nil),
		Processor(nil), Recorder(nil), Failures(nil, nil),
	}
	out := map[string][]string{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			s := d.String()
			name := descName.FindStringSubmatch(s)[1]
			var labels []string
			if m := varLabel.FindStringSubmatch(s); m != nil && m[1] != "" {
				for _, l := range strings.Split(m[1], ",") {
					labels = append(labels, strings.TrimSpace(l))
				}
			}
			out[name] = labels
		}
	}
	return out
}

// The example rules of docs/alerts.md parse, are complete, and reference
// only metrics amends registers, with labels those metrics have.
func TestAlertRulesReferenceRegisteredMetrics(t *testing.T) {
	doc, err := os.ReadFile("../docs/alerts.md")
	require.NoError(t, err)
	blocks := yamlBlock.FindAllSubmatch(doc, -1)
	require.Len(t, blocks, 1, "docs/alerts.md has one yaml block of rules")
	var rules alertRules
	require.NoError(t, yaml.Unmarshal(blocks[0][1], &rules), "the rules are valid YAML")
	require.NotEmpty(t, rules.Groups)

	known := registered()
	require.Contains(t, known, "amends_final_failures_total", "the registry list is complete")
	used := map[string]bool{}
	n := 0
	for _, g := range rules.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			n++
			assert.NotEmpty(t, r.Alert, "every rule is an alert")
			assert.NotEmpty(t, r.Labels["severity"], "%s has a severity", r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], "%s has a summary", r.Alert)
			assert.Equal(t, strings.Count(r.Expr, "("), strings.Count(r.Expr, ")"), "%s: balanced parentheses", r.Alert)
			refs := metricRef.FindAllString(r.Expr, -1)
			require.NotEmpty(t, refs, "%s references an amends metric", r.Alert)
			var exprLabels []string
			for _, m := range refs {
				_, ok := known[m]
				assert.True(t, ok, "%s references %s, which amends does not register", r.Alert, m)
				used[m] = true
			}
			for _, s := range selector.FindAllStringSubmatch(r.Expr, -1) {
				for _, l := range matcher.FindAllStringSubmatch(s[2], -1) {
					assert.Contains(t, known[s[1]], l[1], "%s selects %s on label %s, which it does not have", r.Alert, s[1], l[1])
				}
			}
			for _, b := range byClause.FindAllStringSubmatch(r.Expr, -1) {
				for _, l := range strings.Split(b[1], ",") {
					exprLabels = append(exprLabels, strings.TrimSpace(l))
				}
			}
			for _, l := range exprLabels {
				has := false
				for _, m := range refs {
					has = has || contains(known[m], l)
				}
				assert.True(t, has, "%s aggregates by %s, which none of its metrics has", r.Alert, l)
			}
		}
	}
	assert.GreaterOrEqual(t, n, 3)
	for _, m := range []string{"amends_final_failures_total", "amends_oldest_open_failure_age_seconds", "amends_attempts_total"} {
		assert.True(t, used[m], "the rules use %s", m)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
