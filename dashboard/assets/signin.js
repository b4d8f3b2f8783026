"use strict";
// Sign-in: the token goes once in a POST body and is exchanged for an
// HttpOnly session cookie. It never enters a URL or storage.
(() => {
  const { $, api, errorBox, el } = A;
  function next() {
    const n = new URLSearchParams(location.search).get("next") || "/";
    // Only a path of this site, never another origin.
    return n.startsWith("/") && !n.startsWith("//") ? n : "/";
  }
  async function start() {
    try {
      await api("GET", "/ui/v1/session", undefined, { noRedirect: true });
      location.replace(next()); // already signed in (or no tokens)
      return;
    } catch (err) {
      // Not signed in. A server that signs in through an OIDC issuer
      // says where that starts.
      const sso = err.details && err.details.oidcStart;
      if (typeof sso === "string" && sso.startsWith("/") && !sso.startsWith("//")) {
        $("#sso-link").href = sso + "?next=" + encodeURIComponent(next());
        $("#sso").hidden = false;
      }
    }
    $("#signin-form").addEventListener("submit", async ev => {
      ev.preventDefault();
      const input = $("#token");
      const out = $("#signin-result");
      try {
        await api("POST", "/ui/v1/session", { token: input.value }, { noRedirect: true });
        input.value = "";
        location.replace(next());
      } catch (err) {
        input.value = "";
        A.fill(out, errorBox(err));
        input.focus();
      }
    });
    $("#signin").disabled = false; // enabled once the token goes through the handler above
    $("#token").focus();
    A.ready();
  }
  start();
  void el;
})();
