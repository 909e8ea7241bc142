package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveFlag is one flag of `console serve` as its usage prints it.
type serveFlag struct {
	name, env, def string
}

// serveFlags reads `console serve -h`: each flag, the environment variable
// its usage names last, and its default.
func serveFlags(t *testing.T) map[string]serveFlag {
	t.Helper()
	var usage bytes.Buffer
	if _, err := parseServe([]string{"-h"}, func(string) string { return "" }, &usage); err == nil {
		t.Fatal("serve -h did not stop at the usage")
	}
	envAtEnd := regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)(?: \(default (.*)\))?$`)
	out := map[string]serveFlag{}
	var name string
	for _, line := range strings.Split(usage.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			name = strings.Fields(strings.TrimPrefix(line, "  -"))[0]
		case strings.HasPrefix(line, "    \t") && name != "":
			m := envAtEnd.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("usage of --%s names no environment variable: %q", name, line)
			}
			def := m[2]
			if u, err := strconv.Unquote(def); err == nil {
				def = u
			}
			out[m[1]] = serveFlag{name: name, env: m[1], def: def}
			name = ""
		}
	}
	if len(out) < 40 {
		t.Fatalf("read %d flags from serve's usage; the parse is broken:\n%s", len(out), usage.String())
	}
	return out
}

// splitCell splits a README table cell on the commas between its values
// ("`10m`, `10000`", "(required), empty").
func splitCell(cell string) []string {
	var out []string
	for _, p := range strings.Split(cell, ", ") {
		out = append(out, strings.Trim(strings.TrimSpace(p), "`"))
	}
	return out
}

// sameDefault compares README's default with the flag's.
func sameDefault(readme, flag string) bool {
	switch {
	case strings.HasPrefix(readme, "(required"), strings.HasPrefix(readme, "(empty"), readme == "empty":
		return flag == ""
	case strings.Contains(readme, "<"): // computed at start: http://<addr>, <public url>/auth/callback
		return flag == ""
	}
	if a, err := time.ParseDuration(readme); err == nil {
		b, err := time.ParseDuration(flag)
		return err == nil && a == b
	}
	return readme == flag
}

// TestReadmeSettingsAreServes pins README's Configuration table ("Every
// setting is a flag of `console serve` and an environment variable") to
// `console serve`: each row's variables are bound to the flags it names,
// with the defaults it gives, and every variable serve binds has a row.
// (review rev-docs)
func TestReadmeSettingsAreServes(t *testing.T) {
	flags := serveFlags(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "| variable | flag | default | meaning |")
	if !ok {
		t.Fatal("README has no Configuration table")
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(line, " | ")
		vars, names, defs := splitCell(strings.TrimPrefix(cells[0], "| ")), splitCell(cells[1]), splitCell(cells[2])
		for i, v := range vars {
			listed[v] = true
			if strings.Contains(cells[1], " of `") {
				continue // another command's flag (MIGRATE_DATABASE_URL: migrate's --database-url)
			}
			f, ok := flags[v]
			if !ok {
				t.Errorf("README lists %s, which console serve does not read", v)
				continue
			}
			if i < len(names) && strings.TrimPrefix(names[i], "--") != f.name {
				t.Errorf("README: %s is %s; serve binds it to --%s", v, names[i], f.name)
			}
			if i < len(defs) && !sameDefault(defs[i], f.def) {
				t.Errorf("README: %s defaults to %q; serve's default is %q", v, defs[i], f.def)
			}
		}
	}
	for env, f := range flags {
		if !listed[env] {
			t.Errorf("console serve reads %s (--%s, default %q), which README's Configuration table does not list", env, f.name, f.def)
		}
	}
}
