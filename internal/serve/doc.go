// Package serve is `gpuwatt serve`: it samples every watched GPU without end, with bounded
// memory, and exposes what it knows on /metrics (the Prometheus text format, written by
// internal/promtext): the energy counter (the board's, else the corrected integral), power
// per channel and the corrected power, idle, clocks, temperatures, clock events, the
// per-process split and the sampler's health. The metrics and the methods behind them are
// in docs/serve.md.
//
// What must stay: each scrape turns one snapshot of the Server's state into the samples
// of a promtext.Set (metrics.go's Server.metrics): a scrape reads that snapshot and never
// the driver (TestScrapeNeverWaitsForTheDriver), and the metrics' names, help texts and
// labels live in one list of descriptors (docs/serve.md repeats it).
package serve
