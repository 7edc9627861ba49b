package node

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/NoLagApp/kraken/"

// listedPackage is what go list -json says of a package: its direct
// imports and every package it depends on, tests left out.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs go list -json on the module's packages (each with its
// Deps: every package it depends on, transitively) and returns them by
// import path.
func listPackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	return pkgs
}

// The layers of docs/ARCHITECTURE.md: the transports (and the admin API,
// which serves beside them) know nothing of each other, pkg/metrics knows no component, and the node is the one package
// outside cmd/ that puts the hub, the session protocol and the broker
// together.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	get := func(path string) listedPackage {
		t.Helper()
		p, ok := pkgs[module+path]
		if !ok {
			t.Fatalf("go list does not list %s", path)
		}
		return p
	}
	transports := []string{"pkg/server", "pkg/mqtt/listener", "pkg/admin"}
	for _, a := range transports {
		for _, b := range transports {
			if a != b && slices.Contains(get(a).Deps, module+b) {
				t.Errorf("%s depends on %s: a transport must know nothing of another", a, b)
			}
		}
	}
	for _, d := range get("pkg/metrics").Deps {
		if strings.HasPrefix(d, module) {
			t.Errorf("pkg/metrics depends on %s: it must import no component", strings.TrimPrefix(d, module))
		}
	}
	together := []string{module + "pkg/hub", module + "pkg/session", module + "pkg/broker"}
	var composers []string
	for path, p := range pkgs {
		if strings.HasPrefix(path, module+"cmd/") {
			continue
		}
		if !slices.ContainsFunc(together, func(need string) bool { return !slices.Contains(p.Imports, need) }) {
			composers = append(composers, strings.TrimPrefix(path, module))
		}
	}
	if !slices.Equal(composers, []string{"pkg/node"}) {
		t.Errorf("packages importing pkg/hub, pkg/session and pkg/broker together: %v, want pkg/node alone", composers)
	}
}
