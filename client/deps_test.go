package client_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An HTTP client of amends must not pull in NATS, Prometheus or the server:
// client and the wire types it shares with the server (api) stay light.
func TestNoHeavyDependency(t *testing.T) {
	for _, pkg := range []string{"github.com/amends-dev/amends/client", "github.com/amends-dev/amends/api"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "go list -deps %s: %s", pkg, out)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, pkg, "go list -deps lists the package itself")
		for _, dep := range deps {
			for _, heavy := range []string{"nats-io", "prometheus", "github.com/amends-dev/amends/server", "github.com/amends-dev/amends/projection", "github.com/amends-dev/amends/quarantine"} {
				require.NotContains(t, dep, heavy, "%s depends on %s", pkg, dep)
			}
		}
	}
}
