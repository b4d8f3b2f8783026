package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/server"
)

// controlPlane validates the API and scheduler flags into cfg.
func (f *serveFlags) controlPlane(cfg *serveConfig, env func(string) (string, bool), logger *slog.Logger) error {
	cfg.repairBuckets = f.repairBuckets
	if err := f.loadTokens(cfg); err != nil {
		return err
	}
	host, _, err := parseHostPort("http", f.http, "127.0.0.1:8080")
	if err != nil {
		return err
	}
	if err := f.sec.config(cfg, host, env, logger); err != nil {
		return err
	}
	bind := cfg.tokens
	if cfg.oidc != nil && len(bind) == 0 {
		bind = []server.Token{{Name: "oidc"}} // OIDC authenticates too
	}
	if err := server.CheckBind(f.http, bind); err != nil {
		if errors.Is(err, server.ErrInsecureBind) {
			return usageErrorf("--http %s is not a loopback address and no tokens are configured: anyone who could reach it could read and steer records. "+
				"Configure tokens (--tokens-file or AMENDS_TOKENS) or bind to loopback (--http %s)", f.http, loopbackHint(f.http))
		}
		return usageErrorf("--http %s: %v", f.http, err)
	}
	if err := f.sec.requireTLS(cfg, host); err != nil {
		return err
	}
	if err := f.checkScheduler(); err != nil {
		return err
	}
	rc, err := f.retention.config()
	if err != nil {
		return err
	}
	cfg.retention = rc
	if f.scheduler {
		cfg.scheduler = &schedulerConfig{period: f.period, delay: f.delay, batch: f.batch, workers: f.concurrency, leaseTTL: f.leaseTTL, drainRate: f.drainRate, rate: f.rate}
	}
	return nil
}

// loadTokens reads the tokens of --tokens-file and --tokens into cfg, and
// refuses two tokens of one name.
func (f *serveFlags) loadTokens(cfg *serveConfig) error {
	if f.tokensFile != "" {
		tokens, err := server.LoadTokens(f.tokensFile)
		if err != nil {
			return usageErrorf("--tokens-file: %v", err)
		}
		cfg.tokensFile = f.tokensFile
		cfg.tokens = append(cfg.tokens, tokens...)
	}
	if f.tokens != "" {
		tokens, err := server.ParseTokens(f.tokens)
		if err != nil {
			return usageErrorf("--tokens: %v", err)
		}
		cfg.inlineTokens = tokens
		cfg.tokens = append(cfg.tokens, tokens...)
	}
	if _, err := mergeTokens(cfg.tokens); err != nil {
		return usageErrorf("--tokens-file and --tokens: %v", err)
	}
	return nil
}

// checkScheduler checks the scheduler's flags, even when it is off, so
// that a mistake shows before it is turned on.
func (f *serveFlags) checkScheduler() error {
	for _, err := range []error{
		checkRange("scheduler-period", f.period, time.Millisecond, maxSchedulerDuration, ""),
		checkRange("scheduler-initial-delay", f.delay, 0, maxSchedulerDuration, ""),
		checkRange("scheduler-batch", f.batch, 1, maxSchedulerBatch, ""),
		checkRange("scheduler-concurrency", f.concurrency, 1, maxSchedulerConcurrency, ""),
		checkRange("lease-ttl", f.leaseTTL, minLeaseTTL, maxSchedulerDuration, ""),
	} {
		if err != nil {
			return err
		}
	}
	if !(f.drainRate >= 1 && f.drainRate <= circuit.MaxDrainRate) {
		return usageErrorf("--drain-rate must be between 1 and %d records per second, got %v", circuit.MaxDrainRate, f.drainRate)
	}
	if !(f.rate >= 0.1 && f.rate <= circuit.MaxDrainRate) {
		return usageErrorf("--scheduler-rate must be between 0.1 and %d records per second, got %v", circuit.MaxDrainRate, f.rate)
	}
	return nil
}
