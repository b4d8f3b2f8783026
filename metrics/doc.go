// Package metrics exposes amends' counters as Prometheus collectors:
// records by status and recoverability and per operator view (from the
// projection's index), the projector's work, the scheduler's prepares,
// rejections, backlog and oldest due age, and, for services that embed
// them, the processor's deliveries and replays and the recorder's outcomes;
// and the messages consumers quarantined, by consumer and reason.
//
// Every collector reads its source at scrape time; none keeps state or
// starts a goroutine. Register them with a prometheus.Registerer.
package metrics
