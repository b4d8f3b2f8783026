// Package fanout answers the index's queries from any serve instance when
// the instances each hold a part of the records (the partitions of
// package partition, issue #42).
//
// Every instance runs a Responder: it answers List, Count and Summary
// over NATS request-reply, on the subject DefaultPrefix.<instance>, from
// its own index, and names the partitions that index holds in full. A
// Querier asks every instance the plan places partitions on, at once,
// and merges their answers with package index's merges (Count and Summary
// add the counts; List merges the pages by the order's point, one cursor
// for every part). An answer never comes back short without saying so:
// Coverage lists the partitions of the plan that no instance answered for
// and the instances that did not answer, with why. The live members are
// asked too (QuerierConfig.Members): each names the processors it saw
// records of that the plan does not place yet, and an answer from no
// instance at all is not complete (Coverage.Unseen).
//
// Querier.WaitFor asks the holder of a record's partition to answer once
// its index holds the record at a version (read-your-writes after a
// command); Strict.WaitFor first waits for the views bucket to hold it.
// A responder holds each wait on a goroutine of its own, at most
// ResponderConfig.Waits at once.
//
// The request and the reply are JSON of package api's query types,
// bounded (MaxRequestBytes; a reply within the connection's payload
// limit once gzipped, which a reply over 64 KiB is, and MaxReplyBytes
// once decompressed) and read strictly; a summary and its fingerprint
// groups are asked for apart: a request the responder cannot read is
// answered with an error that names the field, a reply the querier cannot
// read counts as that instance's failure, and neither stops the other
// requests.
//
// What depends on the time (the views: which records are to retry, which
// next, which executing) is answered by each instance at its own now, as
// one index answers at any instant of the query's run: instances whose
// clocks differ by d may count a record that changes view within d on
// either side. A filter with a Now is answered at that instant by every
// instance (each then reads the records instead of its counts, unless
// the Now is its own).
//
// # Concurrency
//
// A Responder's Run answers requests on a fixed number of goroutines and
// returns once they have stopped. A Querier is safe for concurrent use.
package fanout
