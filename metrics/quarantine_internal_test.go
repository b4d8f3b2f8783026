package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/quarantine"
)

type fakeQuarantine []quarantine.Count

func (f fakeQuarantine) Counts() []quarantine.Count { return f }

func TestQuarantineCollector(t *testing.T) {
	a := fakeQuarantine{{Consumer: "amends-projection", Reason: quarantine.ReasonCorrupt, N: 3}}
	b := fakeQuarantine{{Consumer: "amends-projection", Reason: quarantine.ReasonCorrupt, N: 2}, {Consumer: "amends_replay_shop", Reason: quarantine.ReasonRetriesExhausted, N: 1},
		{Consumer: "amends_rules", Reason: quarantine.ReasonInvalidEntry, N: 4}}
	want := `
# HELP amends_quarantined_total Messages a consumer could never handle, recorded in the quarantine and terminated, by consumer and reason.
# TYPE amends_quarantined_total counter
amends_quarantined_total{consumer="amends-projection",reason="corrupt"} 5
amends_quarantined_total{consumer="amends-projection",reason="invalid_view"} 0
amends_quarantined_total{consumer="amends-projection",reason="retries_exhausted"} 0
amends_quarantined_total{consumer="amends-projection",reason="undecodable"} 0
amends_quarantined_total{consumer="amends_replay_shop",reason="corrupt"} 0
amends_quarantined_total{consumer="amends_replay_shop",reason="invalid_view"} 0
amends_quarantined_total{consumer="amends_replay_shop",reason="retries_exhausted"} 1
amends_quarantined_total{consumer="amends_replay_shop",reason="undecodable"} 0
amends_quarantined_total{consumer="amends_rules",reason="invalid_entry"} 4
`
	require.NoError(t, testutil.CollectAndCompare(Quarantine(a, b), strings.NewReader(want)))
	require.NoError(t, testutil.CollectAndCompare(Quarantine(), strings.NewReader("")), "nothing before the first quarantine")
}
