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
	Register(Scenario{
		Name:     "dispatch",
		Title:    "processor: events to a trivial function (decode, lane, call, ack), per message",
		Baseline: "nats.go consumer acking each message",
		Prepare:  prepareDispatch,
	})
	Register(Scenario{
		Name:     "dispatch-ordered",
		Title:    "processor: events to a trivial Ordered function (progress check and write per aggregate), per message",
		Baseline: "the same processor and function without Ordered (the dispatch scenario's amends side)",
		Prepare:  prepareDispatchOrdered,
	})
	Register(Scenario{
		Name:     "record",
		Title:    "recorder: failures of functions that always fail recorded as new ExecutionFailed records (8 at once), per failure",
		Baseline: "sync publish of a record-sized message with an expected last subject sequence (8 publishers)",
		Prepare:  prepareRecord,
	})
	Register(Scenario{
		Name:     "replay",
		Title:    "replay cycle: prepare, targeted replay to the one function, ApplyExecutionSuccess, per cycle",
		Baseline: "get-last + publish, a consumer receiving it, a direct get of the original, get-last + publish of the result",
		Prepare:  prepareReplay,
	})
	Register(Scenario{
		Name:     "due",
		Title:    "the scheduler's Due(now, 100) on an index of 1M records (quick: 100k)",
		Baseline: "the same query on an index of 10k records; the ratio is large/small throughput, 1/3 or more meets the target",
		Prepare:  prepareQuery(dueQuery),
	})
	Register(Scenario{
		Name:     "list",
		Title:    "a List page of 50 filtered by processor and status, on an index of 1M records (quick: 100k)",
		Baseline: "the same query on an index of 10k records; the ratio is large/small throughput, 1/3 or more meets the target",
		Prepare:  prepareQuery(listQuery),
	})
	Register(Scenario{
		Name:     "summary",
		Title:    "the failure Summary of every record, on an index of 1M records (quick: 100k; --records sets it)",
		Baseline: "the same query on an index of 10k records; the ratio is large/small throughput, 1/3 or more meets the target",
		Prepare:  prepareQuery(summaryQuery),
	})
	Register(Scenario{
		Name:     "count",
		Title:    "Count of the FAILED records, on an index of 1M records (quick: 100k; --records sets it)",
		Baseline: "the same query on an index of 10k records; the ratio is large/small throughput, 1/3 or more meets the target",
		Prepare:  prepareQuery(countQuery),
	})
	Register(Scenario{
		Name:    "e2e",
		Title:   "latency from a function's recorded failure to its SUCCEEDED record, 0 s backoff, a scheduler pass every 5 ms",
		Prepare: prepareE2E,
	})
	Register(Scenario{
		Name:    "api",
		Title:   "the HTTP API under a sustained 500 commands/s plus 100 list pages/s; the notes give the rates reached and p50/p99 per kind",
		Prepare: prepareAPI,
	})
}
