// Package bench measures amends operations next to the raw JetStream
// operations they rest on, in the same run, and reports each figure as a
// ratio to its baseline. Absolute rates move by tens of percent between
// runs on a shared machine; ratios measured in one run hold far better,
// which is why every target of the project is a ratio.
//
// A Scenario prepares its fixtures and returns two operations, the raw
// baseline and the amends operation. The Runner drives each with the same
// number of workers for the same time, alternating the two sides in rounds
// so that drift of the machine hits both alike, and records every
// operation's latency.
package bench
