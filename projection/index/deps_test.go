package index_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The index does no I/O: it depends on the aggregate and the API's types,
// never on NATS (projection, which watches the bucket, does).
func TestNoNATSDependency(t *testing.T) {
	const pkg = "github.com/amends-dev/amends/projection/index"
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "go list -deps %s: %s", pkg, out)
	for _, dep := range strings.Fields(string(out)) {
		require.NotContains(t, dep, "nats-io", "%s depends on %s", pkg, dep)
		require.NotEqual(t, "github.com/amends-dev/amends/projection", dep, "the index must not import projection")
	}
}
