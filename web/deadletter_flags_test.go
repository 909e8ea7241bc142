package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

func TestDeadLetterShowsFlagsAndRawHeaders(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	// A header block the NATS client could not read, as the ingester keeps
	// it: exact bytes, read leniently. One line has no colon (and markup),
	// the attempts are negative, a value is 10 KB long.
	block := "NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nno colon " + attrBreak + "\r\n" +
		"Dlq-Attempts: -3\r\nX-Evil: " + scriptTag + "\r\nX-Long: " + strings.Repeat("L", 10<<10) + "\r\n\r\n"
	rec := dlq.ParseDLQ("dlq", dlq.Received{Subject: "dlq.acme.orders.refund", HeaderBlock: []byte(block), Data: []byte("{}"),
		Stream: "FLAGS", Seq: 1, Time: time.Now()})
	_, err := b.Store.Insert(context.Background(), []dlq.Record{rec})
	require.NoError(t, err)
	d, err := b.Store.BySource(context.Background(), "FLAGS", 1, "")
	require.NoError(t, err)

	c, _ := b.SignIn(t, "acme:viewer")
	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", d.ID), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	doc := resp.Doc(t)
	assertNothingExecutable(t, doc, resp.Body)

	var flags []string
	byID(doc, "dl-flag").Each(func(_ int, s *goquery.Selection) { flags = append(flags, s.Text()) })
	assert.Equal(t, d.Flags, flags, "every flag, in order")
	assert.Contains(t, flags, "header_block_unparsed")
	assert.Contains(t, flags, "header_line_skipped")
	assert.Contains(t, flags, "implausible:attempts")
	reasons := text(byID(doc, "dl-malformed"))
	assert.Contains(t, reasons, `line 3 has no colon`)
	assert.Contains(t, reasons, `Dlq-Attempts "-3" is negative`)
	assert.Equal(t, len(d.MalformedReasons), byID(doc, "dl-flag-reason").Length(), "every reason")

	raw := byID(doc, "dl-header-block")
	require.Equal(t, 1, raw.Length(), "the raw header block is shown")
	assert.Contains(t, raw.Text(), "exactly as the stream stored it")
	assert.Equal(t, strings.ReplaceAll(block, "\r\n", "\n"), byID(doc, "dl-header-block-body").Text(), "as text, byte for byte (HTML reads CRLF as LF)")

	// The parsed view keeps the rest; the 10 KB value is cut on the page.
	var long *goquery.Selection
	byID(doc, "dl-header").Each(func(_ int, s *goquery.Selection) {
		if strings.TrimSpace(s.Find("td").First().Text()) == "X-Long" {
			long = s
		}
	})
	require.NotNil(t, long)
	assert.Contains(t, long.Text(), strings.Repeat("L", 4096))
	assert.NotContains(t, long.Text(), strings.Repeat("L", 4096+1))
	assert.Contains(t, long.Find(".flag").Text(), "cut")
}
