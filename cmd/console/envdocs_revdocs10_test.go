package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRevDocs10EveryCommandsVariableIsDocumented: main's usage says
// "Every flag can also be set with the environment variable named in its
// help", and README's Configuration section is where an operator looks
// for what a variable does. Every variable any command reads (its -h
// names it) must appear in README.md or docs/*.md: one nobody documented
// is one an operator cannot know is read, e.g. AUDIT_ANCHORS or
// AUDIT_VERIFY_ACCEPT_UNPROVEN_PRE_V3 left in serve's environment change
// what `console audit verify`, run there as README advises, accepts.
// (review revdocs10)
func TestRevDocs10EveryCommandsVariableIsDocumented(t *testing.T) {
	var docs strings.Builder
	for _, pattern := range []string{"../../README.md", "../../docs/*.md"} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no docs at %s: %v", pattern, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs.Write(b)
		}
	}
	envOf := regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)`)
	commands := [][]string{
		{"serve"}, {"worker"}, {"migrate"}, {"demo"},
		{"audit", "verify"}, {"audit", "checkpoint"}, {"audit", "keygen"},
		{"policy", "rollback"}, {"policy", "status"}, {"policy", "show"},
		{"retention", "forget-stream"},
	}
	seen := 0
	for _, cmd := range commands {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"console"}, cmd...), "-h")
		_ = run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
		usage := stdout.String() + stderr.String()
		names := envOf.FindAllStringSubmatch(usage, -1)
		if len(names) == 0 {
			t.Errorf("console %s -h names no environment variable:\n%s", strings.Join(cmd, " "), usage)
			continue
		}
		for _, m := range names {
			seen++
			if !strings.Contains(docs.String(), m[1]) {
				t.Errorf("console %s reads %s, which neither README.md nor docs/*.md mentions", strings.Join(cmd, " "), m[1])
			}
		}
	}
	if seen < 60 {
		t.Fatalf("read only %d variables from the commands' usage; the parse is broken", seen)
	}
}
