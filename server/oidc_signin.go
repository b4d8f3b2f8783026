package server

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/amends-dev/amends/api"
)

// oidcCookie holds a sign-in through the issuer while the browser is at
// the issuer: the state, the nonce, the PKCE verifier and where to go
// after. HttpOnly, SameSite=Lax (the issuer's redirect back is a
// cross-site navigation), scoped to the callback, ten minutes.
const (
	oidcCookie    = "amends_oidc"
	oidcCookieAge = 10 * time.Minute
)

// oauthConfig is the dashboard's OAuth client at the issuer, with the
// callback for r.
func (o *oidcAuth) oauthConfig(p *oidc.Provider, r *http.Request) oauth2.Config {
	redirect := o.cfg.RedirectURL
	if redirect == "" {
		scheme := "http"
		if info(r).secure {
			scheme = "https"
		}
		redirect = scheme + "://" + r.Host + OIDCCallbackPath
	}
	return oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
}

// oidcStart sends the browser to the issuer to sign in (GET
// /ui/v1/oidc/start?next=PATH).
func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	o := s.oidc
	if o == nil || o.cfg.ClientID == "" {
		return notConfigured("this server has no sign-in through an OIDC issuer; sign in with a token at /signin")
	}
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	for k := range q {
		if k != "next" {
			return badRequest(fieldName(k, "query"), "unknown query parameter %s; /ui/v1/oidc/start takes next", quote(k))
		}
	}
	next := localPath(q.Get("next"))
	p, err := o.ready(r.Context())
	if err != nil {
		return errIssuerUnreachable
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: strings.Join([]string{state, nonce, verifier, base64.RawURLEncoding.EncodeToString([]byte(next))}, "."),
		Path: "/ui/v1/oidc/", MaxAge: int(oidcCookieAge.Seconds()), HttpOnly: true, Secure: info(r).secure, SameSite: http.SameSiteLaxMode})
	cfg := o.oauthConfig(p, r)
	http.Redirect(w, r, cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
	return nil
}

// localPath is next if it is a path of this site ("/..." but not "//..."
// nor "/\..."), else "/".
func localPath(next string) string {
	if next == "" || len(next) > 1024 || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsAny(next, "\r\n\t") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

// oidcCallback takes the browser back from the issuer (GET
// /ui/v1/oidc/callback?code&state): it checks the state against the
// cookie, exchanges the code with the PKCE verifier, verifies the ID token
// and its nonce, maps the role, and starts a session.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request, _ principal) error {
	noStore(w)
	o := s.oidc
	if o == nil || o.cfg.ClientID == "" {
		return notConfigured("this server has no sign-in through an OIDC issuer")
	}
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Path: "/ui/v1/oidc/", MaxAge: -1, HttpOnly: true, Secure: info(r).secure, SameSite: http.SameSiteLaxMode})
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	// Only a failed check of a credential (the code, the ID token) counts
	// against the client's budget and goes to the audit log: anyone can
	// link a browser to this URL with any query, so a request that carries
	// none (an error from "the issuer", no sign-in under way, another
	// state) is answered and logged, never counted, or any page could get
	// its visitor's address refused.
	refused := func(reason, msg string) error {
		s.log.Info("OIDC sign-in: a callback that carries no credential was refused", "reason", reason, "client", info(r).clientString())
		return &apiError{status: http.StatusUnauthorized, body: api.Error{Code: "Unauthorized", Message: msg + "; start again at /signin"}}
	}
	failed := func(reason, msg string) error {
		s.authFailed(r, api.CredentialOIDC, "OIDC sign-in: "+reason)
		return &apiError{status: http.StatusUnauthorized, body: api.Error{Code: "Unauthorized", Message: msg + "; start again at /signin"}}
	}
	if e := q.Get("error"); e != "" {
		return refused("the issuer refused", "the issuer refused the sign-in ("+cut(e)+")")
	}
	c, err := r.Cookie(oidcCookie)
	if err != nil {
		return refused("no sign-in in progress", "no sign-in is in progress in this browser (it expires after 10 minutes)")
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 || q.Get("state") == "" || subtle.ConstantTimeCompare([]byte(parts[0]), []byte(q.Get("state"))) != 1 {
		return refused("state mismatch", "the sign-in's state does not match this browser's")
	}
	nonce, verifier := parts[1], parts[2]
	next := "/"
	if b, err := base64.RawURLEncoding.DecodeString(parts[3]); err == nil {
		next = localPath(string(b))
	}
	code := q.Get("code")
	if code == "" || len(code) > 4096 {
		return refused("no code", "the issuer sent no authorization code")
	}
	p, err := o.ready(r.Context())
	if err != nil {
		return errIssuerUnreachable
	}
	cfg := o.oauthConfig(p, r)
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, o.cfg.HTTPClient), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return failed("code exchange failed", "the issuer did not exchange the code ("+plainOIDCError(err).Error()+")")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return failed("no ID token", "the issuer's answer has no ID token")
	}
	idt, err := o.verify(ctx, raw, idTokenVerifier)
	if err != nil {
		return failed("ID token refused", "the ID token was refused ("+plainOIDCError(err).Error()+")")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return failed("nonce mismatch", "the ID token's nonce is not this sign-in's")
	}
	pr, err := o.principal(idt)
	if err != nil {
		if ae, ok := err.(*apiError); ok {
			s.authFailed(r, api.CredentialOIDC, "OIDC sign-in: no role")
			return ae
		}
		return failed("bad claims", "the ID token was refused ("+err.Error()+")")
	}
	// The session ends when the ID token does (or at SessionTTL): it
	// never outlives what the issuer vouched for.
	if wait, ok := s.limits.signIn(pr.key(), s.now()); !ok {
		s.log.Warn("sign-in: too many for one principal", "name", pr.name, "client", info(r).clientString())
		tooMany(w, wait, "too many sign-ins for "+pr.name)
		return nil
	}
	id, sess, err := s.sessions.create(r.Context(), pr)
	if err != nil {
		return err
	}
	http.SetCookie(w, sessionCookie(r, id, max(1, int(sess.expires.Sub(s.now()).Seconds()))))
	s.audit(r, api.AuditEntry{Kind: api.AuditSignIn, Actor: pr.name, Role: string(pr.role), Credential: api.CredentialOIDC, Reason: "oidc " + o.cfg.Issuer})
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}
