package server

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
)

type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		Parameters []struct {
			Ref  string `json:"$ref"`
			Name string `json:"name"`
			In   string `json:"in"`
			Sch  struct {
				Enum []string `json:"enum"`
			} `json:"schema"`
		} `json:"parameters"`
	} `json:"paths"`
	Components struct {
		Parameters map[string]struct {
			Name string `json:"name"`
			In   string `json:"in"`
		} `json:"parameters"`
		Schemas map[string]struct {
			Enum []string `json:"enum"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadDoc(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(openAPIDocument, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), "an OpenAPI 3 document")
	return doc
}

// The document describes exactly the routes the server serves.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadDoc(t)
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range New(Config{}).routes {
		served = append(served, rt.method+" "+rt.pattern)
	}
	sort.Strings(documented)
	sort.Strings(served)
	assert.Equal(t, served, documented)
}

// queryParams resolves the query parameters of one operation.
func queryParams(doc openAPIDoc, method, path string) []string {
	var out []string
	for _, p := range doc.Paths[path][method].Parameters {
		name, in := p.Name, p.In
		if p.Ref != "" {
			c := doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
			name, in = c.Name, c.In
		}
		if in == "query" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func sorted(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.Strings(out)
	return out
}

// The documented parameters and enums are the ones the handlers accept.
func TestOpenAPIParametersMatchTheHandlers(t *testing.T) {
	doc := loadDoc(t)
	assert.Equal(t, sorted(filterParams, pageParams), queryParams(doc, "get", "/api/v1/records"))
	assert.Equal(t, sorted(slices.DeleteFunc(slices.Clone(filterParams), func(s string) bool { return s == "view" }), pageParams),
		queryParams(doc, "get", "/api/v1/views/{view}"))
	assert.Equal(t, sorted(filterParams), queryParams(doc, "get", "/api/v1/count"))
	assert.Equal(t, sorted(filterParams), queryParams(doc, "get", "/api/v1/summary"))

	commandEnum := func(path string) []string {
		for _, p := range doc.Paths[path]["post"].Parameters {
			if p.Name == "command" {
				return p.Sch.Enum
			}
		}
		return nil
	}
	assert.Equal(t, OperatorCommands, commandEnum("/api/v1/records/{id}/{command}"))
	assert.Equal(t, BatchCommands, commandEnum("/api/v1/batch/{command}"))
	enum := func(name string) []string { return doc.Components.Schemas[name].Enum }
	var views, statuses, recs, kinds []string
	for _, v := range aggregate.Views {
		views = append(views, string(v))
	}
	for _, v := range aggregate.Statuses {
		statuses = append(statuses, string(v))
	}
	for _, v := range aggregate.Recoverabilities {
		recs = append(recs, string(v))
	}
	for _, v := range aggregate.FunctionKinds {
		kinds = append(kinds, string(v))
	}
	assert.Equal(t, views, enum("View"))
	assert.Equal(t, statuses, enum("Status"))
	assert.Equal(t, recs, enum("Recoverability"))
	assert.Equal(t, kinds, enum("FunctionKind"))
}
