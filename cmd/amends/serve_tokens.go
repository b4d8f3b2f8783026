package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/server"
)

// tokensCheckEvery is how often serve checks whether the tokens file
// changed.
const tokensCheckEvery = time.Second

// mergeTokens joins the tokens of the file and of --tokens, with the rules
// of one file: unique names and secrets.
func mergeTokens(tokens []server.Token) ([]server.Token, error) {
	names := map[string]bool{}
	hashes := map[[32]byte]string{}
	for _, t := range tokens {
		h := t.Hash
		switch {
		case names[t.Name]:
			return nil, fmt.Errorf("token name %q appears twice; names are the actors of the audit trail and must be unique", t.Name)
		case hashes[h] != "":
			return nil, fmt.Errorf("tokens %q and %q have the same secret; give every token its own secret (amends token new)", hashes[h], t.Name)
		}
		names[t.Name], hashes[h] = true, t.Name
	}
	return tokens, nil
}

// warnTokens logs what is weak about the tokens of file: plaintext
// secrets, and a file others can read.
func warnTokens(logger *slog.Logger, file string, tokens []server.Token) {
	var plain []string
	for _, t := range tokens {
		if !t.Hashed() {
			plain = append(plain, t.Name)
		}
	}
	if len(plain) > 0 {
		logger.Warn("the tokens file holds plaintext secrets; store their hashes instead (amends token hash NAME ROLE < secret)", "file", file, "tokens", strings.Join(plain, ","))
	}
	warnIfShared(logger, "the tokens file", file)
}

// tokenReloader re-reads the tokens file when it changes and gives the
// API the new tokens: a removed or changed token is revoked at once (its
// sessions and streams end). A file that does not parse keeps the last
// good tokens; its error is logged once per change of the file. A file
// emptied of tokens (with no OIDC) keeps them too, and serve is not ready
// (/readyz says why) until the file holds tokens again.
type tokenReloader struct {
	file   string
	inline []server.Token
	api    *server.Server
	logger *slog.Logger
	every  time.Duration
	stamp  fileStamp
	// refused is why the last change of the file was refused; nil when
	// it was taken.
	refused atomic.Pointer[error]
}

func newTokenReloader(file string, inline []server.Token, api *server.Server, logger *slog.Logger) *tokenReloader {
	st, _ := stampOf(file)
	return &tokenReloader{file: file, inline: inline, api: api, logger: logger, every: tokensCheckEvery, stamp: st}
}

// run checks the file every r.every until ctx ends.
func (r *tokenReloader) run(ctx context.Context) error {
	wait.Every(ctx, r.every, func() { r.check(ctx) })
	return nil
}

// check reloads the file if its stamp changed.
func (r *tokenReloader) check(ctx context.Context) {
	st, err := stampOf(r.file)
	if err != nil {
		if r.stamp != (fileStamp{}) {
			r.logger.Error("the tokens file cannot be read; keeping the last good tokens", "file", r.file, "err", err)
			r.stamp = fileStamp{}
		}
		return
	}
	if st == r.stamp {
		return
	}
	r.stamp = st
	tokens, err := server.LoadTokens(r.file)
	if err == nil {
		tokens, err = mergeTokens(append(tokens, r.inline...))
	}
	if err != nil {
		r.logger.Error("the changed tokens file does not load; keeping the last good tokens until it does", "file", r.file, "err", err)
		return
	}
	if err := r.api.SetTokens(ctx, tokens); err != nil {
		why := fmt.Errorf("the tokens file %s changed to hold no tokens, which would leave the API no way to authenticate; the last good tokens are kept until it holds some again (%w)", r.file, err)
		r.refused.Store(&why)
		r.logger.Error(why.Error(), "file", r.file, "refused", r.api.RefusedTokenChanges())
		return
	}
	r.refused.Store(nil)
	warnTokens(r.logger, r.file, tokens[:len(tokens)-len(r.inline)])
	r.logger.Info("tokens file reloaded", "file", r.file, "tokens", len(tokens))
}

// ready is the reloader's readiness: not ready while the last change of
// the file was refused, so that /readyz shows it.
func (r *tokenReloader) ready(context.Context) error {
	if why := r.refused.Load(); why != nil {
		return *why
	}
	return nil
}
