package audit

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notSelecting are the Filter fields that select nothing of an export by
// themselves, and why: every other field, set, must change what an
// export's query selects and be named in its signed trailer.
var notSelecting = map[string]string{
	"Limit":        "a page size: the exports ignore it",
	"RequestItems": "the dead letters of Request's items, read for it: they select under Request, which is named",
}

// sampleFilterValue is a valid value, not zero, for a Filter field of
// type t.
func sampleFilterValue(t *testing.T, name string, typ reflect.Type) reflect.Value {
	switch name {
	case "Object":
		return reflect.ValueOf("dead_letter 83")
	case "Outcome":
		return reflect.ValueOf(OutcomeDenied)
	case "Tenants":
		return reflect.ValueOf([]string{"acme"})
	}
	switch typ {
	case reflect.TypeFor[string]():
		return reflect.ValueOf("x7")
	case reflect.TypeFor[[]string]():
		return reflect.ValueOf([]string{"replay.request"})
	case reflect.TypeFor[int64]():
		return reflect.ValueOf(int64(7))
	case reflect.TypeFor[[]int64]():
		return reflect.ValueOf([]int64{7})
	case reflect.TypeFor[int]():
		return reflect.ValueOf(10)
	case reflect.TypeFor[time.Time]():
		return reflect.ValueOf(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	}
	t.Fatalf("Filter.%s is a %s: give it a sample value here", name, typ)
	return reflect.Value{}
}

// TestFixFilterTextNamesEveryFilter: every Filter field that changes what
// an export selects is named, with its value, in the text the export's
// trailer signs (round 12's Request was not: a request's export said it
// was not filtered). Walked over the struct, so a new filter is checked
// the day it is added.
func TestFixFilterTextNamesEveryFilter(t *testing.T) {
	t.Parallel()
	const head = 1000
	zeroConds, zeroArgs, _, err := exportConds(Filter{}, head)
	require.NoError(t, err)
	require.Empty(t, filterText(Filter{}), "an unfiltered export says so")
	typ := reflect.TypeFor[Filter]()
	for i := range typ.NumField() {
		field := typ.Field(i)
		t.Run(field.Name, func(t *testing.T) {
			var f Filter
			reflect.ValueOf(&f).Elem().Field(i).Set(sampleFilterValue(t, field.Name, field.Type))
			conds, args, _, err := exportConds(f, head)
			require.NoError(t, err)
			selects := !reflect.DeepEqual(conds, zeroConds) || !reflect.DeepEqual(args, zeroArgs)
			text := filterText(f)
			if why, ok := notSelecting[field.Name]; ok {
				assert.False(t, selects, "Filter.%s is listed as selecting nothing (%s), and it changes the export's query", field.Name, why)
				assert.Empty(t, text)
				return
			}
			require.True(t, selects, "Filter.%s changes nothing an export selects: list it in notSelecting with why", field.Name)
			assert.NotEmpty(t, text, "Filter.%s selects, and the signed trailer says the export is not filtered", field.Name)
		})
	}
}

// TestFixFilterTextRequest: a request's export names the request, beside
// the other filters, with its value.
func TestFixFilterTextRequest(t *testing.T) {
	t.Parallel()
	text := filterText(Filter{Tenants: []string{AllTenants}, Tenant: "acme", Request: 7, RequestItems: []int64{3, 4}})
	assert.Equal(t, `tenant="acme" request="7"`, text)
	assert.True(t, strings.Contains(filterText(Filter{Request: 7, Before: 90}), `before="90"`))
}
