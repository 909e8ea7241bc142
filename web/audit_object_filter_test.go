package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAuditObjectFilterAsShown: the Object filter takes an object as the
// table shows it ("dead_letter 83") as well as "dead_letter:83", and the
// type in each row's Object cell links to that filter.
func TestAuditObjectFilterAsShown(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	for _, o := range [][2]string{{"dead_letter", "83"}, {"replay_request", "83"}, {"route", "GET /policy"}} {
		_, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.object", ObjectType: o[0], ObjectID: o[1], Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}
	c, _ := b.SignIn(t, "*:auditor")
	objects := func(q string) []string {
		resp := b.Do(t, c, "GET", "/audit?action=test.object&"+q, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		var out []string
		resp.Doc(t).Find(`[data-testid="audit-row"] td[data-label="Object"]`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.Join(strings.Fields(s.Text()), " "))
		})
		return out
	}
	assert.Equal(t, []string{"dead_letter 83"}, objects("object=dead_letter+83"), "as the table shows it")
	assert.Equal(t, []string{"dead_letter 83"}, objects("object=dead_letter:83"))
	assert.Equal(t, []string{"dead_letter 83"}, objects("object=+dead_letter++83+"), "blanks around are not the object's")
	assert.Equal(t, []string{"route GET /policy"}, objects("object=route+GET+/policy"), "an id with a blank in it")
	assert.Equal(t, []string{"replay_request 83", "dead_letter 83"}, objects("object=83"), "an id alone: every type")

	d := b.Do(t, c, "GET", "/audit?action=test.object", nil, nil).Doc(t)
	var links []string
	d.Find(`[data-testid="audit-object-filter"]`).Each(func(_ int, s *goquery.Selection) {
		links = append(links, s.AttrOr("href", ""))
	})
	assert.Equal(t, []string{"/audit?object=route%3AGET+%2Fpolicy", "/audit?object=replay_request%3A83", "/audit?object=dead_letter%3A83"}, links)
	for _, href := range links {
		assert.Len(t, b.Do(t, c, "GET", href, nil, nil).Doc(t).Find(`[data-testid="audit-row"]`).Nodes, 1, "%s finds its object", href)
	}
}
