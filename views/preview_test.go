//go:build preview

package views

// Preview renders every page with sample data into $PREVIEW_DIR (default
// /tmp/quarantine-preview), next to a copy of web/static, for looking at
// in a browser or with scripts/screenshot.sh:
//
//	go test -tags preview -run TestPreview ./views/
//	cd /tmp/quarantine-preview && python3 -m http.server --bind 127.0.0.1 8899

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/a-h/templ"
)

func TestPreview(t *testing.T) {
	dir := os.Getenv("PREVIEW_DIR")
	if dir == "" {
		dir = "/tmp/quarantine-preview"
	}
	if err := os.MkdirAll(filepath.Join(dir, "static"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("../web/static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join("../web/static", e.Name()), filepath.Join(dir, "static", e.Name()))
	}

	now := time.Date(2026, 11, 29, 10, 2, 11, 0, time.UTC)
	user := &User{
		Name:  "Dana Okafor",
		Email: "dana.okafor@example.com",
		Roles: []TenantRole{{"acme", "oncall"}, {"acme", "approver"}, {"globex", "oncall"}, {"*", "auditor"}},
		Nav:   Nav{Dashboard: true, DeadLetters: true, Groups: true, Approvals: true, Audit: true, Admin: true, Policy: true, Sessions: true},
	}
	page := func(title, active string) Page {
		return Page{Title: title, Active: active, User: user, RequestID: "01JDQ3ZK8M4T7C2V9X6B5N1R0A"}
	}

	actions := []string{"replay.request", "replay.approve", "replay.reject", "replay.publish", "deadletter.discard", "binding.add", "binding.delete", "authz.denied", "audit.export"}
	actors := []string{"dana.okafor@example.com", "lee.chen@example.com", "system", "m.rossi@example.com", "sam@globex.example"}
	outcomes := []string{"ok", "ok", "ok", "denied", "ok", "error", "ok"}
	reasons := []string{"", "customer confirmed address fix", "approver is requester", "PubAck timeout after 5s; reconciled", "duplicate of 8812, already replayed", "", "schema v3 backfill done"}
	var rows []AuditRow
	for i := range 25 {
		seq := int64(18342 - i)
		rows = append(rows, AuditRow{
			Seq: seq, At: now.Add(-time.Duration(i*7+3) * time.Minute),
			Actor:  actors[i%len(actors)],
			Tenant: []string{"acme", "globex", "acme", "initech"}[i%4],
			Action: actions[i%len(actions)], ObjectType: []string{"deadletter", "replay", "binding"}[i%3],
			ObjectID: fmt.Sprintf("%d", 90211+i*13), MessageID: fmt.Sprintf("ORDERS:%d", 7712300+i*97),
			Outcome: outcomes[i%len(outcomes)], Reason: reasons[i%len(reasons)],
			URL: fmt.Sprintf("/audit/%d", seq),
		})
	}
	rows[4].Reason = "<script>alert(1)</script> payload said \"><img src=x onerror=alert(1)>"
	listModel := AuditListModel{
		Action:       "/audit.html", // the preview server has no /audit route
		Filter:       AuditFilter{Tenant: "acme"},
		Actions:      []ActionChoices{{Family: "all", Actions: actions}},
		Outcomes:     []string{"ok", "denied", "error"},
		Tenants:      []string{"acme", "globex", "initech"},
		Rows:         rows,
		NextURL:      "/audit?tenant=acme&before=18317",
		PrevURL:      "",
		ExportCSVURL: "/audit/export.csv?tenant=acme", ExportJSONLURL: "/audit/export.jsonl?tenant=acme",
		Checkpoint: &AuditCheckpoint{Seq: 18330, Hash: "c41d7e2a9b3f5c8d0e6a1b7c3d9e5f2a8b4c0d6e1f7a3b9c5d2e8f4a0b6c1d7e",
			At: now.Add(-4 * time.Minute), Reason: "interval", KeyID: "7e96492090167dbf", Since: 12},
	}
	rows[2].Actor = "approver@example.com (unverified)"
	errModel := listModel
	errModel.Rows = nil
	errModel.Filter = AuditFilter{From: "yesterday", To: "2026-11-29T25:00", Outcome: "maybe"}
	errModel.Errors = map[string]string{"from": "Write a time like 2026-11-29T14:00 (UTC).", "to": "Write a time like 2026-11-29T15:00 (UTC).", "outcome": "Choose ok, denied or error."}
	emptyModel := listModel
	emptyModel.Rows = nil
	emptyModel.NextURL = ""
	emptyModel.Filter = AuditFilter{Actor: "nobody@example.com"}

	event := AuditEventModel{
		Seq: 18338, At: now.Add(-31 * time.Minute),
		ActorIssuer: "https://dex.example.com/dex", ActorSubject: "CiQ4ZjE0YjU2Mi0yYmQ1LTQ2OGMtOTRiYy1lMWI2MDg2ZjJjZTISBWxvY2Fs", ActorEmail: "dana.okafor@example.com",
		Tenant: "acme", Action: "replay.approve", ObjectType: "replay", ObjectID: "4471", MessageID: "ORDERS:7712691",
		OperationID: "op_2Qm9x8YkP3e", RequestID: "01JDQ3ZK8M4T7C2V9X6B5N1R0A", Reason: "customer confirmed address fix; replaying the same operation", Outcome: "ok",
		RemoteAddr: "10.42.7.19", UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
		Before:    "{\n  \"status\": \"pending\",\n  \"approvals\": [],\n  \"intent_hash\": \"9f2c4e0a7b1d3c5e8f6a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4\",\n  \"policy_version\": \"p-7c1e\"\n}",
		After:     "{\n  \"status\": \"approved\",\n  \"approvals\": [\n    {\n      \"by\": \"dana.okafor@example.com\",\n      \"at\": \"2026-11-29T09:31:11Z\"\n    }\n  ],\n  \"intent_hash\": \"9f2c4e0a7b1d3c5e8f6a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4\",\n  \"policy_version\": \"p-7c1e\",\n  \"note\": \"<script>alert(1)</script>\"\n}",
		PrevHash:  "3b8e1f0c9d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c",
		Hash:      "c41d7e2a9b3f5c8d0e6a1b7c3d9e5f2a8b4c0d6e1f7a3b9c5d2e8f4a0b6c1d7e",
		ObjectURL: "/approvals/4471",
	}

	bindings := BindingsModel{
		Bindings: []Binding{
			{ID: 1, Email: "dana.okafor@example.com", Role: "admin", Tenant: "*", CreatedBy: "bootstrap", CreatedAt: now.Add(-90 * 24 * time.Hour), DeleteURL: "/admin/bindings/1/delete"},
			{ID: 2, Email: "lee.chen@example.com", Role: "oncall", Tenant: "acme", CreatedBy: "dana.okafor@example.com", CreatedAt: now.Add(-12 * 24 * time.Hour), DeleteURL: "/admin/bindings/2/delete"},
			{ID: 3, Email: "lee.chen@example.com", Role: "approver", Tenant: "acme", CreatedBy: "dana.okafor@example.com", CreatedAt: now.Add(-12 * 24 * time.Hour), DeleteURL: "/admin/bindings/3/delete"},
			{ID: 4, Subject: "CiQ4ZjE0YjU2Mi0yYmQ1LTQ2OGMtOTRiYy1lMWI2MDg2ZjJjZTISBWxvY2Fs", Role: "auditor", Tenant: "globex", CreatedBy: "dana.okafor@example.com", CreatedAt: now.Add(-3 * time.Hour), DeleteURL: "/admin/bindings/4/delete"},
			{ID: 5, Email: "m.rossi@example.com", Role: "viewer", Tenant: "initech", CreatedBy: "lee.chen@example.com", CreatedAt: now.Add(-20 * time.Minute)},
			{ID: 6, Email: "josé@example.com", Role: "approver", Tenant: "acme", CreatedBy: "dana.okafor@example.com", CreatedAt: now.Add(-40 * 24 * time.Hour),
				DeleteURL: "/admin/bindings/6/delete", Unmatched: "Its address is not ASCII, and email bindings match ASCII addresses only (lower-casing other letters " +
					"can read as another mailbox). Remove it, and bind the person's identity instead."},
		},
		GroupRules:  []GroupRule{{"platform-oncall", "oncall", "*"}, {"sre-leads", "approver", "acme"}, {"compliance", "auditor", "*"}},
		GroupPrefix: "quarantine:",
		Form:        BindingForm{Email: "not-an-email", Role: "", Tenant: "acme", Errors: map[string]string{"email": "Write an email address like name@example.com.", "role": "Choose a role."}},
		Roles:       []string{"viewer", "oncall", "approver", "auditor", "admin"},
		Tenants:     []string{"*", "acme", "globex", "initech"},
		AddURL:      "/admin/bindings",
	}

	adminPage := page("Role bindings", "admin")
	adminPage.Flash = []Flash{{Kind: FlashOK, Text: "Removed role viewer on globex from kim@example.com."}}
	noRole := Page{Title: "No access", User: &User{Name: "Kim Park", Email: "kim.park@example.com", EmailVerified: true}}

	var approvalRows []ApprovalRow
	var replayRows []ReplayRow
	for i := range 3 {
		id := int64(4120 + i)
		at := now.Add(-time.Duration(90-i*20) * time.Minute)
		approvalRows = append(approvalRows, ApprovalRow{ID: id, URL: fmt.Sprintf("/replay/requests/%d", id), Tenant: "acme", Class: "same_operation",
			Items: "0 replayed · 1 to go", Requester: "lee.chen@example.com", Reason: "mail provider outage over", Submitted: at, Approvals: "0 of 1",
			Needs: "one approver who is not the requester"})
		replayRows = append(replayRows, ReplayRow{ID: id, URL: fmt.Sprintf("/replay/requests/%d", id), Tenant: "acme", Class: "same_operation",
			Status: "pending_approval", Items: "0 replayed · 1 to go", Total: 1, Requester: "dana@example.com", RequesterURL: "/replay/requests?requester_issuer=x&requester_subject=dana",
			Submitted: at, Approvals: "0 of 1", NeedsApproval: true, ApprovalsNeeded: 1})
	}
	approvalsMore := ApprovalsModel{Rows: approvalRows, Now: now, More: 412, NextURL: "/approvals?after=1764400000000000-4122"}
	replaysByIdentity := ReplayListModel{Action: PathReplays, Filter: ReplayFilter{RequesterIssuer: "https://dex.example.com/dex", RequesterSubject: "CiQ4ZjE0YjU2Mi0yYmQ1"},
		Tenants: []string{"acme", "globex"}, Classes: []string{"rebuildable", "same_operation", "manual"}, Rows: replayRows, Now: now,
		Counts: ReplayCounts{Requests: 3, Counted: 3}, RequesterName: "dana@example.com", ClearRequesterURL: PathReplays}

	pages := map[string]templ.Component{
		"approvals-more.html":    Approvals(page("Approvals", "approvals"), approvalsMore),
		"replays-requester.html": ReplayList(page("Replays", "replays"), replaysByIdentity),
		"audit.html":             AuditList(page("Audit log", "audit"), listModel),
		"audit-errors.html":      AuditList(page("Audit log", "audit"), errModel),
		"audit-empty.html":       AuditList(page("Audit log", "audit"), emptyModel),
		"event.html":             AuditEvent(page("Audit event 18338", "audit"), event),
		"admin.html":             AdminBindings(adminPage, bindings),
		"noaccess.html":          NoAccess(noRole),
		"sessions.html": AdminSessions(page("Sessions", "sessions"), SessionsModel{RevokeURL: "/admin/sessions/revoke", People: []SessionPerson{
			{Name: "Dana Okafor", Email: "dana.okafor@example.com", Issuer: "https://dex.example.com/dex", Subject: "CiQ4ZjE0YjU2Mi0yYmQ1", Sessions: 2, LastLogin: now.Add(-35 * time.Minute)},
			{Email: "approver@example.com (unverified)", Issuer: "https://github-dex.example.com", Subject: "gh-99812", Sessions: 1, LastLogin: now.Add(-3 * time.Minute)},
		}}),
		"signedout.html":   SignedOut(Page{Title: "Signed out"}),
		"loginfailed.html": LoginFailed(Page{Title: "Sign-in failed"}, "state mismatch: the sign-in link expired or was opened in another browser"),
		"error404.html":    ErrorPage(page("Not found", ""), 404, "Not found", "There is nothing here, or it is not yours to see."),
		"error500.html":    ErrorPage(page("Something went wrong", ""), 500, "Something went wrong", "The error was logged. Quote the request id when you report it."),
	}
	for name, c := range pages {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Render(context.Background(), f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d pages to %s", len(pages), dir)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
