package argometrics

import (
	"os"
	"strings"
	"testing"
)

// TestTheDocsTableListsTheCatalog checks the table of "## argo's metric names" in docs/metrics.md row by row
// against Catalog: the same names in the same order, with the same type, labels and served/not served.
func TestTheDocsTableListsTheCatalog(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatalf("reading the metrics docs: %v", err)
	}
	rows := docRows(t, string(doc))
	if len(rows) != len(Catalog) {
		t.Errorf("docs/metrics.md lists %d of argo's metrics, the catalog %d", len(rows), len(Catalog))
	}
	for i := 0; i < len(rows) && i < len(Catalog); i++ {
		e, row := Catalog[i], rows[i]
		served := "not served"
		if e.Served {
			served = "served"
		}
		want := []string{"`" + e.Name + "`", string(e.Type), docLabels(e.Labels), served}
		if strings.Join(row[:4], " | ") != strings.Join(want, " | ") {
			t.Errorf("row %d of the docs table:\n got  %s\n want %s", i+1, strings.Join(row[:4], " | "), strings.Join(want, " | "))
		}
		if !e.Served && row[4] != e.Reason {
			t.Errorf("%s: the docs give the reason %q, the catalog %q", e.Name, row[4], e.Reason)
		}
	}
}

func docLabels(labels []string) string {
	if len(labels) == 0 {
		return "–"
	}
	return "`" + strings.Join(labels, "`, `") + "`"
}

// docRows are the cells of the table rows under the "## argo's metric names" heading.
func docRows(t *testing.T, doc string) [][]string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## argo's metric names\n")
	if !ok {
		t.Fatal(`docs/metrics.md has no "## argo's metric names" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `argo_workflows_") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 5 {
			t.Fatalf("a row of the docs table has %d cells, want 5: %s", len(cells), line)
		}
		rows = append(rows, cells)
	}
	return rows
}
