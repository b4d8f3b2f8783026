package server

// RouteInfo is one route of the table, for tests over every route.
type RouteInfo struct {
	Method, Pattern string
	// Role is the least role it needs; "" means none.
	Role Role
}

// RouteList lists s's routes, fallbacks included.
func (s *Server) RouteList() []RouteInfo {
	out := make([]RouteInfo, 0, len(s.routes))
	for _, rt := range s.routes {
		out = append(out, RouteInfo{Method: rt.method, Pattern: rt.pattern, Role: rt.role})
	}
	return out
}
