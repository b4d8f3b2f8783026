package server

import (
	"net/http"

	"github.com/amends-dev/amends/api"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routeTable lists every endpoint; the OpenAPI document must describe
// exactly these except the fallbacks (a test checks it). Each command has
// its own path, so that a generated client gets one typed operation per
// command.
func (s *Server) routeTable() []route {
	routes := []route{
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
		{method: "GET", pattern: "/api/v1/quarantine", role: RoleViewer, handler: s.listQuarantine},
		{method: "GET", pattern: "/api/v1/audit", role: RoleOperator, handler: s.listAudit},
		{method: "GET", pattern: "/api/v1/holds", role: RoleViewer, handler: s.listHolds},
		{method: "GET", pattern: "/api/v1/holds/{key}", role: RoleViewer, handler: s.getHold},
		{method: "POST", pattern: "/api/v1/holds/{key}/release", role: RoleOperator, handler: s.releaseHold},
		{method: "POST", pattern: "/api/v1/holds/{key}/skip", role: RoleOperator, handler: s.skipHeld},
		{method: "POST", pattern: "/api/v1/replays", role: RoleOperator, handler: s.startReplay},
		{method: "GET", pattern: "/api/v1/replays/{id}", role: RoleViewer, handler: s.getReplay},
		{method: "GET", pattern: "/api/v1/archive", role: RoleViewer, handler: s.listSweeps},
		{method: "GET", pattern: "/api/v1/archive/{sweep}", role: RoleViewer, handler: s.listArchived},
		{method: "GET", pattern: "/api/v1/archive/{sweep}/{id}", role: RoleViewer, handler: s.getArchived},
		{method: "POST", pattern: "/api/v1/archive/{sweep}/restore", role: RoleOperator, handler: s.restoreArchived},
	}
	routes = append(routes, s.ruleRoutes()...)
	routes = append(routes, s.repairRoutes()...)
	routes = append(routes, s.attemptRoutes()...)
	routes = append(routes, s.circuitRoutes()...)
	for _, name := range OperatorCommands {
		routes = append(routes, route{method: "POST", pattern: "/api/v1/records/{id}/" + name, role: RoleOperator, handler: s.commandFor(name)})
	}
	for _, name := range BatchCommands {
		routes = append(routes, route{method: "POST", pattern: "/api/v1/batch/" + name, role: RoleOperator, handler: withCommand(name, s.batch)})
	}
	// The dashboard's pages and data, when the server has one (they are
	// not part of the API, so the OpenAPI document leaves them out).
	routes = append(routes, s.dashboardRoutes()...)
	// Any other command name reaches the handler, which answers 404 with
	// the list of commands.
	return append(routes,
		route{method: "POST", pattern: "/api/v1/records/{id}/{command}", role: RoleOperator, handler: s.command, fallback: true},
		route{method: "POST", pattern: "/api/v1/batch/{command}", role: RoleOperator, handler: s.batch, fallback: true},
	)
}

// withCommand runs the batch handler h as the route of command name: h
// reads the name as the path value "command", as on a fallback route.
func withCommand(name string, h func(http.ResponseWriter, *http.Request, principal) error) func(http.ResponseWriter, *http.Request, principal) error {
	return func(w http.ResponseWriter, r *http.Request, p principal) error {
		r.SetPathValue("command", name)
		return h(w, r, p)
	}
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request, _ principal) error {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, api.Error{Code: "NotReady", Message: err.Error()})
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
