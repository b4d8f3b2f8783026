package dashboard

// Counts exposes the live counts' computation to the benchmark.
func (d *Dashboard) Counts() (Counts, error) { return d.counts() }
