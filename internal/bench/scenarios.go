package bench

// The scenarios, in the order of the project's benchmark list.
func init() {
	Register(Scenario{
		Name:     "append",
		Title:    "append the first stream of new aggregates",
		Baseline: "publish the same message with the same headers",
		Prepare:  prepareAppend,
	})
	Register(Scenario{
		Name:     "command",
		Title:    "ApplyRetrySpec on an existing ExecutionFailed record (load, decide, append)",
		Baseline: "direct get of the last message + publish of the same bytes with the expected last subject sequence",
		Prepare:  prepareCommand,
	})
	Register(Scenario{
		Name:     "load",
		Title:    "load a 5-version aggregate",
		Baseline: "direct get of the last message by subject + 4 direct gets by sequence",
		Prepare:  prepareLoad,
	})
}
