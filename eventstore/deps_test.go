package eventstore_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The contract and its suite name no transport: a store on anything can
// implement the one and run the other.
func TestContractHasNoNATSDependency(t *testing.T) {
	for _, pkg := range []string{"github.com/amends-dev/amends/eventstore", "github.com/amends-dev/amends/eventstore/eventstoretest"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "go list -deps %s: %s", pkg, out)
		require.Contains(t, string(out), "github.com/amends-dev/amends/eventstore\n", "go list -deps %s lists the package itself", pkg)
		for _, dep := range strings.Fields(string(out)) {
			require.NotContains(t, dep, "nats-io", "%s depends on %s", pkg, dep)
		}
	}
}
