package notify

import (
	"net"
	"net/http/httptest"
	"strconv"
)

// portOf returns the port srv listens on.
func portOf(srv *httptest.Server) string {
	return strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
}
