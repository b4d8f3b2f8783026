package projection

// LoadFilteredAbove sets the number of keys above which an index of some
// partitions loads through a watch of their keys alone (filteredLoadKeys),
// so that a test runs either load on a small bucket.
func LoadFilteredAbove(keys uint64) IndexOption {
	return func(ix *Index) error {
		ix.loadKeys = keys
		return nil
	}
}

// RestoreKeysEach sets the keys a partition's snapshot must spare reading
// for the new partitions to start from their snapshots (restoreKeys), so
// that a test restores those of a small bucket.
func RestoreKeysEach(keys uint64) IndexOption {
	return func(ix *Index) error {
		ix.restoreKeys = keys
		return nil
	}
}
