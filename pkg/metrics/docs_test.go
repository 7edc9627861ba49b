package metrics

import (
	"os"
	"regexp"
	"testing"
)

// TestDocsAndDashboardMatchTheMetrics: every kraken_* metric is listed in
// docs/operations.md, and every kraken_* series the Grafana dashboard
// queries exists.
func TestDocsAndDashboardMatchTheMetrics(t *testing.T) {
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	d := NewDescs()
	for _, desc := range d.All() {
		m := fq.FindStringSubmatch(desc.String())
		if m == nil {
			t.Fatalf("no name in %s", desc)
		}
		names[m[1]] = true
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for n := range names {
		if !regexp.MustCompile("`" + n + "`").Match(doc) {
			t.Errorf("docs/operations.md does not list %s", n)
		}
	}
	dash, err := os.ReadFile("../../deploy/grafana/kraken.json")
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`kraken_[a-z_]+`).FindAllString(string(dash), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard queries no kraken_* series")
	}
	for _, n := range used {
		base := regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(n, "")
		if !names[n] && !names[base] {
			t.Errorf("the dashboard queries %s, which does not exist", n)
		}
	}
}
