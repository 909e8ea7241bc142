package views_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestFixWeb12ConfirmDialogsNamePeopleAsThePageDoes: a browser's confirm
// dialog takes no markup, so the question before signing a person out
// everywhere, or removing a role binding, names them as Shown writes them:
// a direction control or a zero-width character in an email, identity or
// tenant is its marker there as on the page, and cannot make the dialog
// name someone else.
func TestFixWeb12ConfirmDialogsNamePeopleAsThePageDoes(t *testing.T) {
	t.Parallel()
	confirmOf := func(t *testing.T, html []byte, sel string) []string {
		doc, err := goquery.NewDocumentFromReader(bytes.NewReader(html))
		require.NoError(t, err)
		var out []string
		doc.Find(sel).Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("data-confirm", "")) })
		return out
	}

	var buf bytes.Buffer
	require.NoError(t, views.AdminSessions(views.Page{}, views.SessionsModel{RevokeURL: "/admin/sessions/revoke", People: []views.SessionPerson{
		{Email: "kate@exam\u202eelpmaxe.com", Issuer: "https://idp", Subject: "kate", Sessions: 1, LastLogin: time.Now()},
		{Issuer: "https://idp", Subject: "pat\u200b", Sessions: 2, LastLogin: time.Now()},
		{Email: "lee@example.com", Issuer: "https://idp", Subject: "lee", Sessions: 1, LastLogin: time.Now()},
	}}).Render(context.Background(), &buf))
	assert.Equal(t, []string{
		"Sign kate@exam<U+202E>elpmaxe.com out of every session?",
		"Sign https://idp|pat<U+200B> out of every session?",
		"Sign lee@example.com out of every session?",
	}, confirmOf(t, buf.Bytes(), `[data-testid="session-revoke"]`))

	buf.Reset()
	require.NoError(t, views.AdminBindings(views.Page{}, views.BindingsModel{Bindings: []views.Binding{
		{ID: 1, Subject: "https://idp|pat\u200b", Role: "viewer", Tenant: "ac\u202eme", DeleteURL: "/admin/bindings/1/delete"},
	}}).Render(context.Background(), &buf))
	assert.Equal(t, []string{"Remove role viewer on ac<U+202E>me from https://idp|pat<U+200B>?"},
		confirmOf(t, buf.Bytes(), `[data-testid="binding-delete"]`))
}
