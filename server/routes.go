package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routeTable lists every endpoint; the OpenAPI document must describe
// exactly these (a test checks it).
func (s *Server) routeTable() []route {
	return []route{
		{method: "GET", pattern: "/healthz", handler: s.healthz},
		{method: "GET", pattern: "/readyz", handler: s.readyz},
		{method: "GET", pattern: "/metrics", role: RoleViewer, handler: s.metricsPage},
		{method: "GET", pattern: "/api/v1/openapi.json", handler: s.openapi},
		{method: "GET", pattern: "/api/v1/records", role: RoleViewer, handler: s.list},
		{method: "GET", pattern: "/api/v1/views/{view}", role: RoleViewer, handler: s.listView},
		{method: "GET", pattern: "/api/v1/count", role: RoleViewer, handler: s.count},
		{method: "GET", pattern: "/api/v1/summary", role: RoleViewer, handler: s.summary},
		{method: "GET", pattern: "/api/v1/records/{id}", role: RoleViewer, handler: s.get},
		{method: "GET", pattern: "/api/v1/records/{id}/history", role: RoleViewer, handler: s.history},
		{method: "POST", pattern: "/api/v1/records/{id}/{command}", role: RoleOperator, handler: s.command},
		{method: "POST", pattern: "/api/v1/batch/{command}", role: RoleOperator, handler: s.batch},
	}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request, _ principal) error {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, Error{Code: "NotReady", Message: err.Error()})
			return nil
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (s *Server) metricsPage(w http.ResponseWriter, r *http.Request, _ principal) error {
	promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}
