package web_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAuditActionFilterListsAllActions checks the audit log's Action filter
// against the one list of actions (audit.Actions): the filter offers
// exactly those, family by family with a "<family>.*" choice that finds
// every action of the family; every dotted action spelled in the module's
// code is in the list (so a new action cannot be recorded without the
// filter offering it); and what a run of the console records is in it.
func TestAuditActionFilterListsAllActions(t *testing.T) {
	t.Parallel()

	t.Run("CodeSpellsOnlyListedActions", func(t *testing.T) {
		for _, a := range actionLiterals(t, "..") {
			assert.Truef(t, audit.KnownAction(a.name) || a.name == audit.ReplayItemPrefix,
				"%s: action %q is not in audit/actions.go: add it there (the audit filter lists that file)", a.where, a.name)
		}
	})

	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "orders.refund", "actions-1", nil)
	resp := b.Do(t, oncall, "POST", "/deadletters/"+strconv.FormatInt(id, 10)+"/discard", url.Values{"reason": {"dup"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	require.Equal(t, http.StatusForbidden, b.Do(t, oncall, "GET", "/audit", nil, nil).Status) // authz.denied

	t.Run("FilterOffersEveryAction", func(t *testing.T) {
		d := b.Do(t, auditor, "GET", "/audit", nil, nil).Doc(t)
		var offered, families []string
		d.Find(`select[name="action"] optgroup`).Each(func(_ int, g *goquery.Selection) {
			g.Find("option").Each(func(_ int, o *goquery.Selection) {
				v := o.AttrOr("value", "")
				if strings.HasSuffix(v, ".*") {
					families = append(families, strings.TrimSuffix(v, ".*"))
					assert.Equal(t, g.AttrOr("label", ""), strings.TrimSuffix(v, ".*"), "a family's choice is in its group")
					return
				}
				offered = append(offered, v)
			})
		})
		assert.Equal(t, audit.Actions(), offered, "every action, in the list's order")
		for _, f := range audit.Families() {
			if len(f.Actions) > 1 {
				assert.Contains(t, families, f.Name, "the whole %s family can be chosen", f.Name)
			}
		}
	})
	t.Run("FamilyChoiceFinds", func(t *testing.T) {
		d := b.Do(t, auditor, "GET", "/audit?action=deadletter.*", nil, nil).Doc(t)
		rows := auditRowActions(d)
		assert.Equal(t, []string{audit.ActionDeadLetterDiscard}, rows)
		d = b.Do(t, auditor, "GET", "/audit?action=auth.*", nil, nil).Doc(t)
		for _, a := range auditRowActions(d) {
			assert.Equal(t, "auth", audit.Family(a))
		}
		assert.Equal(t, http.StatusUnprocessableEntity, b.Do(t, auditor, "GET", "/audit?action=nosuch.*", nil, nil).Status)
	})
	t.Run("RecordedActionsAreListed", func(t *testing.T) {
		rows, err := b.Pool.Query(context.Background(), `SELECT DISTINCT action FROM audit_log`)
		require.NoError(t, err)
		defer rows.Close()
		n := 0
		for rows.Next() {
			var a string
			require.NoError(t, rows.Scan(&a))
			assert.True(t, audit.KnownAction(a), "recorded action %q is not listed", a)
			n++
		}
		require.NoError(t, rows.Err())
		assert.GreaterOrEqual(t, n, 3, "sign-ins, the discard, the denial")
	})
}

func auditRowActions(d *goquery.Document) []string {
	var out []string
	byID(d, "audit-row").Each(func(_ int, s *goquery.Selection) { out = append(out, text(s.Find(`td[data-label="Action"]`))) })
	return out
}

type actionLiteral struct{ name, where string }

// dotted is how an action reads: lowercase words joined by dots, maybe a
// family prefix ending in a dot ("replay.item.").
var dotted = regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+\.?$|^[a-z]+\.$`)

// actionLiterals finds, in the non-test Go files under root, every string
// literal that reads as an audit action: a dotted word of a listed family,
// or one given where an action goes (an Action field, a call that builds
// or records an event).
func actionLiterals(t *testing.T, root string) []actionLiteral {
	t.Helper()
	families := map[string]bool{}
	for _, f := range audit.Families() {
		families[f.Name] = true
	}
	var out []actionLiteral
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		add := func(lit *ast.BasicLit, actionPlace bool) {
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !dotted.MatchString(s) {
				return
			}
			if actionPlace || families[audit.Family(s)] {
				out = append(out, actionLiteral{name: s, where: fset.Position(lit.Pos()).String()})
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Action" {
					if lit, ok := n.Value.(*ast.BasicLit); ok {
						add(lit, true)
					}
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Action" && i < len(n.Rhs) {
						if lit, ok := n.Rhs[i].(*ast.BasicLit); ok {
							add(lit, true)
						}
					}
				}
			case *ast.CallExpr:
				name := strings.ToLower(callName(n.Fun))
				place := strings.Contains(name, "event") || strings.Contains(name, "audit") || strings.Contains(name, "den")
				for _, arg := range n.Args {
					if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						add(lit, place)
					}
				}
				return true
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					add(n, false)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out, "the walk found the module's actions")
	return out
}

func callName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}
