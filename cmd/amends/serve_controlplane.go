package main

import (
	"github.com/amends-dev/amends/server"
)

// controlPlane validates the API and scheduler flags into cfg.
func (f *serveFlags) controlPlane(cfg *serveConfig) error {
	if f.tokensFile != "" {
		tokens, err := server.LoadTokens(f.tokensFile)
		if err != nil {
			return usageErrorf("--tokens-file: %v", err)
		}
		cfg.tokens = append(cfg.tokens, tokens...)
	}
	if f.tokens != "" {
		tokens, err := server.ParseTokens(f.tokens)
		if err != nil {
			return usageErrorf("--tokens: %v", err)
		}
		cfg.tokens = append(cfg.tokens, tokens...)
	}
	if err := server.CheckBind(f.http, cfg.tokens); err != nil {
		return usageErrorf("--http: %v", err)
	}
	if !f.scheduler {
		return nil
	}
	switch {
	case f.period <= 0:
		return usageErrorf("--scheduler-period must be positive, got %s", f.period)
	case f.delay < 0:
		return usageErrorf("--scheduler-initial-delay must not be negative, got %s", f.delay)
	case f.batch < 1:
		return usageErrorf("--scheduler-batch must be at least 1, got %d", f.batch)
	case f.concurrency < 1:
		return usageErrorf("--scheduler-concurrency must be at least 1, got %d", f.concurrency)
	}
	cfg.scheduler = &schedulerConfig{period: f.period, delay: f.delay, batch: f.batch, workers: f.concurrency, leaseTTL: f.leaseTTL}
	return nil
}
