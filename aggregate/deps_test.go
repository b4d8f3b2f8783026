package aggregate_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The domain core and the Service reach the store only through small
// interfaces: neither this package nor eventstore may depend on NATS.
func TestNoNATSDependency(t *testing.T) {
	for _, pkg := range []string{"github.com/amends-dev/amends/aggregate", "github.com/amends-dev/amends/eventstore"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "go list -deps %s: %s", pkg, out)
		for _, dep := range strings.Fields(string(out)) {
			require.NotContains(t, dep, "nats-io", "%s depends on %s", pkg, dep)
		}
	}
}
