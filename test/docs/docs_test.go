// Package docs_test keeps the house's map true to the code: docs/architecture.md names every package and
// README's layout lists it.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// packages are the module's package directories, relative to its root (other modules not walked).
func packages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		if p != "." {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestArchitectureNamesEveryPackageOutsideTheTestSuites(t *testing.T) {
	root := moduleRoot(t)
	doc := read(t, filepath.Join(root, "docs", "architecture.md"))
	for _, p := range packages(t, root) {
		if strings.HasPrefix(p, "test/") || p == "test" {
			continue // the suites are named together as test/...
		}
		if !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/architecture.md does not name package %s", p)
		}
	}
}

func TestTheReadmesLayoutListsEveryPackage(t *testing.T) {
	root := moduleRoot(t)
	readme := read(t, filepath.Join(root, "README.md"))
	start := strings.Index(readme, "## Layout")
	if start < 0 {
		t.Fatal("README.md has no Layout section")
	}
	layout := readme[start:]
	if end := strings.Index(layout[3:], "\n## "); end >= 0 {
		layout = layout[:end+3]
	}
	for _, p := range packages(t, root) {
		parent, base := filepath.Split(p)
		// A top-level package by its directory ("memoize/"), a nested one by its path.
		listed := strings.Contains(layout, p+"/") || (parent != "" && strings.Contains(layout, p))
		// Packages of internal/, sandbox/ and test/ are listed by name under their parent.
		if !listed && parent != "" {
			top := strings.Split(parent, "/")[0]
			listed = (top == "internal" || top == "sandbox" || top == "test") && strings.Contains(layout, base)
		}
		if !listed {
			t.Errorf("README.md's layout does not list package %s", p)
		}
	}
}
