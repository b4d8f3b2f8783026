// Package api holds the wire types of the amends HTTP API (package server):
// the JSON bodies of its requests and responses and the query a list
// takes, shared by the server, the projection that produces the read
// models and the Go client (package client).
//
// It is light on purpose: it imports the standard library, aggregate and
// eventstore only, so a program that only talks to an amends server does
// not pull in NATS, Prometheus or the server. The JSON shapes are those of
// the OpenAPI document the server serves at /api/v1/openapi.json; they
// only ever grow by optional fields.
//
// # Reading
//
// Get answers a View, List a Page of Items in the order of a Query, Count
// a CountResponse and Summary a Summary, each for a Filter; a record's
// history is a list of HistoryEntry. Query.Values and Filter.Values
// encode them as the query parameters the server parses.
//
// # Steering
//
// The operator commands are named by Command; their bodies are
// PrepareRequest, RetrySpecRequest, MarkRecoverableRequest and
// ChangeFunctionRequest, and a successful one answers a CommandResponse.
// A batch (BatchRequest) answers a BatchResult, or streams BatchLines.
//
// # Errors
//
// Every error response is an Error: {code, message, details}.
package api
