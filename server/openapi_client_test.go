package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	// The generated client's only dependency. Importing it here keeps it
	// in go.mod (go mod tidy) and in the module cache, so the client
	// builds offline.
	_ "github.com/oapi-codegen/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generatedMain calls the server with the client that oapi-codegen made
// from the served document, and prints what it saw as one JSON object.
const generatedMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"generatedclient/amendsapi"
)

func main() {
	server, token, id := os.Args[1], os.Args[2], os.Args[3]
	c, err := amendsapi.NewClientWithResponses(server, amendsapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	check(err)
	ctx := context.Background()
	out := map[string]any{}

	list, err := c.ListRecordsWithResponse(ctx, &amendsapi.ListRecordsParams{})
	check(err)
	out["listStatus"] = list.StatusCode()
	if list.JSON200 != nil {
		var ids []string
		for _, it := range list.JSON200.Items {
			ids = append(ids, *it.Id)
		}
		out["listIds"] = ids
	}

	get, err := c.GetRecordWithResponse(ctx, id)
	check(err)
	out["getStatus"] = get.StatusCode()
	if get.JSON200 != nil {
		out["getId"] = get.JSON200.State.Id
		out["getVersion"] = get.JSON200.Version
	}

	missing, err := c.PrepareCompensationWithResponse(ctx, "no-such-record", &amendsapi.PrepareCompensationParams{}, amendsapi.PrepareCompensationJSONRequestBody{})
	check(err)
	out["missingStatus"] = missing.StatusCode()
	if missing.JSON404 != nil {
		out["missingCode"] = missing.JSON404.Code
	}

	reason := "the mail server is slow"
	spec, err := c.ApplyRetrySpecWithResponse(ctx, id, &amendsapi.ApplyRetrySpecParams{}, amendsapi.ApplyRetrySpecJSONRequestBody{
		MaxRetries: 7, MinBackoff: 30, ExecutionTimeout: 60, Reason: &reason,
	})
	check(err)
	out["specStatus"] = spec.StatusCode()
	if spec.JSON200 != nil {
		out["specMaxRetries"] = spec.JSON200.State.RetrySpec.MaxRetries
		out["specVersion"] = spec.JSON200.Version
	} else {
		out["specBody"] = string(spec.Body)
	}

	dry := true
	batch, err := c.BatchPrepareCompensationWithResponse(ctx, amendsapi.BatchSpec{DryRun: &dry, Filter: &amendsapi.Filter{Id: &id}})
	check(err)
	out["batchStatus"] = batch.StatusCode()
	if batch.JSON200 != nil {
		out["batchMatched"] = batch.JSON200.Matched
		if len(batch.JSON200.Records) == 1 {
			out["batchOutcome"] = batch.JSON200.Records[0].Outcome
		}
	} else {
		out["batchBody"] = string(batch.Body)
	}

	check(json.NewEncoder(os.Stdout).Encode(out))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// A Go client generated from the served document with oapi-codegen (the
// tool in go.mod, as users run it) compiles and works against the server.
// It runs in CI as everywhere: without the go command it fails.
func TestGeneratedClientWorksAgainstTheServer(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "this test runs the go command; put it on PATH")
	root := strings.TrimSpace(run(t, "", goCmd, "env", "GOMOD"))
	require.True(t, strings.HasSuffix(root, "go.mod"), "go env GOMOD: %q", root)
	root = filepath.Dir(root)

	e := newEnv(t)
	id := e.create(t, 1, nil)
	r := e.do(t, "GET", "/api/v1/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.status)

	// A module of its own with the main module's requirements, so that it
	// builds with the versions go.sum pins.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "openapi.json"), r.body, 0o600))
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	gomod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(gomod, []byte("module generatedclient"))
	gomod = regexp.MustCompile(`(?ms)^tool \(.*?^\)$|^tool .*$`).ReplaceAll(gomod, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o600))
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), gosum, 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "amendsapi"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(generatedMain), 0o600))

	// The server stubs are generated too, to show that their types do not
	// collide with the client's either.
	run(t, root, goCmd, "tool", "oapi-codegen", "-generate", "types,client,std-http-server,strict-server", "-package", "amendsapi",
		"-o", filepath.Join(dir, "amendsapi", "client.go"), filepath.Join(dir, "openapi.json"))
	out := run(t, dir, goCmd, "run", ".", e.http.URL, operatorKey, id)

	var got struct {
		ListStatus     int      `json:"listStatus"`
		ListIDs        []string `json:"listIds"`
		GetStatus      int      `json:"getStatus"`
		GetID          string   `json:"getId"`
		GetVersion     int64    `json:"getVersion"`
		MissingStatus  int      `json:"missingStatus"`
		MissingCode    string   `json:"missingCode"`
		SpecStatus     int      `json:"specStatus"`
		SpecMaxRetries int32    `json:"specMaxRetries"`
		SpecVersion    int64    `json:"specVersion"`
		SpecBody       string   `json:"specBody"`
		BatchStatus    int      `json:"batchStatus"`
		BatchMatched   int      `json:"batchMatched"`
		BatchOutcome   string   `json:"batchOutcome"`
		BatchBody      string   `json:"batchBody"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), "the client's output: %s", out)
	assert.Equal(t, http.StatusOK, got.ListStatus, "list records")
	assert.Equal(t, []string{id}, got.ListIDs, "list records")
	assert.Equal(t, http.StatusOK, got.GetStatus, "get the record")
	assert.Equal(t, id, got.GetID, "get the record")
	assert.Equal(t, int64(1), got.GetVersion, "get the record")
	assert.Equal(t, http.StatusNotFound, got.MissingStatus, "prepare an unknown record")
	assert.Equal(t, "NotFound", got.MissingCode, "prepare an unknown record: the typed 404 body")
	assert.Equal(t, http.StatusOK, got.SpecStatus, "apply a retry spec: %s", got.SpecBody)
	assert.Equal(t, int32(7), got.SpecMaxRetries, "apply a retry spec")
	assert.Equal(t, int64(2), got.SpecVersion, "apply a retry spec")
	assert.Equal(t, http.StatusOK, got.BatchStatus, "a dry-run batch: %s", got.BatchBody)
	assert.Equal(t, 1, got.BatchMatched, "a dry-run batch")
	assert.Equal(t, "would-apply", got.BatchOutcome, "a dry-run batch")
}

// run runs a command in dir with a generous deadline and returns its
// standard output; a failure fails the test with the command's errors.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS="+os.Getenv("GOFLAGS")+" -mod=readonly")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %s:\n%s", name, strings.Join(args, " "), stderr.String())
	return stdout.String()
}
