package retention

// SetHook makes sw call hook at each step of a batch ("archived",
// "pending", "tallied", "purged" after each record); an error from it
// stops the pass there, as a crash would.
func SetHook(sw *Sweeper, hook func(step string) error) { sw.hook = hook }

// TallyKey is the key of the tally of function f, code and fingerprint.
var TallyKey = tallyKey
