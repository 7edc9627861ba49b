// Package docs holds no code; its test checks that the documentation cited
// by the repository's code and documents is in the repository.
package docs

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory.
const root = ".."

// scanned are the paths, relative to root, whose files are searched for
// citations; skipped are directory names never entered.
var (
	scanned = []string{"pkg", "cmd", "docs", "bench", "deploy", "examples", "README.md"}
	skipped = map[string]bool{"third_party": true, ".git": true, "node_modules": true}
)

var (
	// decisionRef is a decision id as the code cites it: OQ-<n> or D-<n>.
	decisionRef = regexp.MustCompile(`\b(OQ-[0-9]+|D-[0-9]+)`)
	// sectionRef is a section of the wire reference as the code cites it,
	// under the original description's name, also when a comment wraps
	// between the name and the number; a sentence's final dot is trimmed
	// from the number.
	sectionRef = regexp.MustCompile(`wire-reference\.md(?:[ \t]+|[ \t]*\n[ \t]*(?://|#|\*)?[ \t]*)§([0-9.]+)`)
	// oldSectionRef is a section cited under the original description's
	// file name, which the repository does not contain: none may be left.
	oldSectionRef = regexp.MustCompile(`(?:^|[^\w/-])protocol\.md(?:[ \t]+|[ \t]*\n[ \t]*(?://|#|\*)?[ \t]*)§([0-9.]+)`)
	// decisionHeading and sectionHeading are the headings that define them:
	// the id or § number first in a Markdown heading.
	decisionHeading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(OQ-[0-9]+|D-[0-9]+)\b`)
	sectionHeading  = regexp.MustCompile(`(?m)^#{1,6}[ \t]+§([0-9]+(?:\.[0-9]+)*)(?:[ \t]|$)`)
)

// oldDecisionsName is the name of the design-decisions file the code used to
// cite, without ".md" so that a name wrapped at the end of a comment line
// is found too; it is built so that this file does not mention it.
var oldDecisionsName = "protocol-" + "decisions"

// citation is where a reference occurs: a file relative to root, and a line.
type citation struct {
	file string
	line int
}

func (c citation) String() string { return fmt.Sprintf("%s:%d", c.file, c.line) }

// refs maps each reference found to where it occurs.
type refs map[string][]citation

// scan reads every text file under the scanned paths and returns the
// decision ids, the section numbers, and the citations of files the
// repository does not have (oldDecisionsName, oldSectionRef).
func scan(t *testing.T) (ids, sections, old refs) {
	t.Helper()
	ids, sections, old = refs{}, refs{}, refs{}
	for _, p := range scanned {
		err := filepath.WalkDir(filepath.Join(root, p), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if skipped[d.Name()] {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
				return nil // binary
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			text := string(b)
			at := func(offset int) citation {
				return citation{rel, 1 + strings.Count(text[:offset], "\n")}
			}
			for _, m := range decisionRef.FindAllStringSubmatchIndex(text, -1) {
				id := text[m[2]:m[3]]
				ids[id] = append(ids[id], at(m[0]))
			}
			for _, m := range sectionRef.FindAllStringSubmatchIndex(text, -1) {
				if n := strings.TrimRight(text[m[2]:m[3]], "."); n != "" {
					sections[n] = append(sections[n], at(m[0]))
				}
			}
			for i, line := range strings.Split(text, "\n") {
				if strings.Contains(line, oldDecisionsName) {
					old[oldDecisionsName] = append(old[oldDecisionsName], citation{rel, i + 1})
				}
			}
			for _, m := range oldSectionRef.FindAllStringSubmatchIndex(text, -1) {
				old["protocol.md §"] = append(old["protocol.md §"], at(m[0]))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("scanning %s: %v", p, err)
		}
	}
	return ids, sections, old
}

// headings returns the references defined as headings in the document
// docs/name, failing on a reference defined twice.
func headings(t *testing.T, name string, re *regexp.Regexp) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if defined[m[1]] {
			t.Errorf("docs/%s defines %s twice", name, m[1])
		}
		defined[m[1]] = true
	}
	if len(defined) == 0 {
		t.Fatalf("docs/%s defines nothing", name)
	}
	return defined
}

// missing reports each reference of found that defined lacks, as what
// followed by the reference, with the first max places that cite it (all
// of them when max is 0).
func missing(t *testing.T, found refs, defined map[string]bool, what string, max int) {
	t.Helper()
	var keys []string
	for k := range found {
		if !defined[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := found[k]
		var where []string
		for i := 0; i < len(at) && (max == 0 || i < max); i++ {
			where = append(where, at[i].String())
		}
		if max > 0 && len(at) > max {
			where = append(where, fmt.Sprintf("and %d more", len(at)-max))
		}
		t.Errorf("%s%s, cited at %s", what, k, strings.Join(where, ", "))
	}
}

// TestReferencesResolve checks that the repository stands on its own: every
// decision id the code and documents cite (OQ-<n>, D-<n>) is a heading of
// docs/decisions.md, every section they cite as "wire-reference.md §<n>"
// is a heading of docs/wire-reference.md, and nothing cites a file outside
// the repository.
func TestReferencesResolve(t *testing.T) {
	ids, sections, old := scan(t)
	if len(ids) == 0 || len(sections) == 0 {
		t.Fatalf("found %d decision ids and %d sections: is the scan looking at the repository?", len(ids), len(sections))
	}
	t.Logf("%d decision ids and %d sections cited", len(ids), len(sections))
	t.Run("decisions", func(t *testing.T) {
		missing(t, ids, headings(t, "decisions.md", decisionHeading), "docs/decisions.md has no heading for ", 5)
	})
	t.Run("sections", func(t *testing.T) {
		missing(t, sections, headings(t, "wire-reference.md", sectionHeading), "docs/wire-reference.md has no heading for wire-reference.md §", 5)
	})
	// Nothing cites the documents these two replace under their old names
	// (the design-decisions file, the original's protocol description by
	// section): the repository has neither.
	t.Run("no-outside-file", func(t *testing.T) {
		missing(t, old, nil, "the repository cites a file outside it: ", 0)
	})
}
