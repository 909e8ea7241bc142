package web

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestSubmitFormBoundsTheNote: a reconciliation note longer than a request
// keeps is a message on its field (422, the page again), not an error page.
func TestSubmitFormBoundsTheNote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		bytes int
		error bool
	}{
		{"AtTheBound", replay.MaxReconciliationNoteBytes, false},
		{"OverTheBound", replay.MaxReconciliationNoteBytes + 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := submitForm{Reason: "r", Note: strings.Repeat("é", tt.bytes/2) + strings.Repeat("x", tt.bytes%2)}.Validate()
			if tt.error {
				assert.Contains(t, errs["reconciliation_note"], "at most")
			} else {
				assert.Empty(t, errs)
			}
		})
	}
}
