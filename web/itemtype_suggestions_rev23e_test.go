package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestRevText23ItemTypeSuggestionHidesDirectionOverride: with more item
// types than the filter's select offers (dlq.ItemTypeChoices), the item
// type filter of the list and of the groups page is a text field whose
// suggestions (a <datalist>) are the most frequent item types, written as
// <option value="..."> with nothing else (views.Field, 6764565). A
// producer's item type is any subject token: "refund.\u202edetaerc"
// (a right-to-left override) is offered in the browser's suggestion list
// as "refund.created", and a zero-width space makes two suggestions read
// the same. Every other place a producer's value is written reads it as it
// is (Untrusted, Shown: option labels of the select, titles); the
// suggestions, which an on-call picks from to choose what to filter and
// then act on ("all matching"), do not.
//
// Severity: low (Trojan-Source text in a suggestion list; the field shows
// "Reads as" only after the filter is applied). Expected: a suggestion
// whose value holds hidden or direction-changing characters has a label
// that reads as it is (label={ Shown(v) }), or is not suggested.
func TestRevText23ItemTypeSuggestionHidesDirectionOverride(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	const hostile = "refund.\u202edetaerc"
	var letters []testfactory.Letter
	for k := range 5 { // the most frequent: among the suggestions
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: hostile, MsgID: fmt.Sprintf("h23-%d", k), Payload: []byte(`{}`)})
	}
	for i := range dlq.ItemTypeChoices + 10 { // more item types than the select offers: the field is typed
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: fmt.Sprintf("common.%03d", i), MsgID: fmt.Sprintf("c23-%d", i), Payload: []byte(`{}`)})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)

	for _, path := range []string{"/deadletters", "/groups"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			d := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
			in := d.Find(`input[name="type"]`)
			require.Equal(t, 1, in.Length(), "the item type filter is typed (more item types than the select offers)")
			offered := 0
			d.Find("datalist#" + in.AttrOr("list", "") + " option").Each(func(_ int, o *goquery.Selection) {
				v := o.AttrOr("value", "")
				if !views.HasHidden(v) {
					return
				}
				offered++
				assert.Equal(t, views.Shown(v), o.AttrOr("label", ""),
					"%s: the suggestion %q is offered as the browser shows its value (%q reads as %q): no label reads it as it is", path, v, v, "refund.created")
			})
			if offered == 0 {
				return // not suggested at all: also fine
			}
		})
	}
}
