package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBinaryDoesNotLinkTesting guards issue 13: test helpers (natstest,
// contracttest, ...) import package testing, and a production package that
// imports one of them makes the binary link testing and its flags.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	// One line a package: its import path, then its imports.
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	linked := false
	var importers []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "testing" {
			linked = true
		}
		if slices.Contains(f[1:], "testing") {
			importers = append(importers, f[0])
		}
	}
	if linked {
		t.Fatalf("the cutover binary links package testing, imported by %v", importers)
	}
}

// TestTestutilOnlyInTests: internal/testutil imports package testing, so
// only _test.go files may import it; a package's own files never do.
func TestTestutilOnlyInTests(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	const testutil = "github.com/cutover/cutover/internal/testutil"
	out, err := exec.Command(gobin, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 && slices.Contains(f[1:], testutil) {
			t.Errorf("%s imports %s outside its tests", f[0], testutil)
		}
	}
}

// TestLibrariesDoNotLinkTheServer: the packages a downstream service
// imports — the routing library, the SDK, the event types, the contract,
// the orchestrator client, the projector, the NATS contract transport —
// build without nats-server (the embedded servers live in package nats;
// the client side in nats/natsclient).
func TestLibrariesDoNotLinkTheServer(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	for _, pkg := range []string{"../../kvrouting", "../../app/client", "../../events", "../../eventlog", "../../services/contract", "../../services/participant", "../../services/pgstore", "../../services/conformance", "../../services/httproute", "../../nats/natsclient", "../../orchestrator", "../../projector", "../../services/contractnats"} {
		out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, "nats-server") {
				t.Errorf("%s depends on %s", pkg, strings.TrimSpace(line))
				break
			}
		}
	}
}

// TestFrameworkDoesNotImportTheApp keeps the layout honest: the framework
// (the contract, the participant kit and its stores, the NATS transport,
// the conformance kit, routing, events, the orchestrator, the projector)
// builds without the chat reference application under app/, which uses
// the framework as an outside team would.
func TestFrameworkDoesNotImportTheApp(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}",
		"../../services/...", "../../kvrouting/...", "../../events/...", "../../eventlog/...", "../../nats/...", "../../orchestrator/...", "../../projector/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "github.com/cutover/cutover/") || strings.HasPrefix(f[0], "github.com/cutover/cutover/app/") {
			continue
		}
		for _, dep := range f[1:] {
			if strings.HasPrefix(dep, "github.com/cutover/cutover/app/") {
				t.Errorf("framework package %s depends on the app's %s", f[0], dep)
			}
		}
	}
}

// TestExamplesUseNoInternalPackages: the Examples `go doc` shows import
// only what a library user can import.
func TestExamplesUseNoInternalPackages(t *testing.T) {
	files, err := filepath.Glob("../../*/example*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../*/*/example*_test.go")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found only %d example files: %v", len(files), files)
	}
	for _, f := range files {
		if strings.Contains(f, "/internal/") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"github.com/cutover/cutover/internal/`) {
			t.Errorf("%s imports an internal package", f)
		}
	}
}
