package projection

import "github.com/amends-dev/amends/projection/index/indextest"

// The generator of package indextest, under its old names.
const base = indextest.Base

var randomView = indextest.RandomView
