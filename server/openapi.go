package server

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes every route of the API; a test checks it
// against the route table.
//
//go:embed openapi.json
var openAPIDocument []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPIDocument)
	return err
}
