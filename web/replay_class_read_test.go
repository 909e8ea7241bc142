package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClassReadLabelsTheLeadingClass: a rule's reason that begins with a
// class's key begins with its label on the page; the key elsewhere, and a
// word that only looks like a key, are left as they are.
func TestClassReadLabelsTheLeadingClass(t *testing.T) {
	for in, want := range map[string]string{
		"same_operation: replay request 1 already holds this dead letter":                                                "same operation: replay request 1 already holds this dead letter",
		`same_operation (its error class "x" replays at least as same_operation, stricter than dedupe): no operation id`: `same operation (its error class "x" replays at least as same_operation, stricter than dedupe): no operation id`,
		"manual: one item per request": "manual: one item per request",
		`type "REPLAY a" to confirm`:   `type "REPLAY a" to confirm`,
		"same_operation is the class":  "same_operation is the class",
		"not_a_class: something":       "not_a_class: something",
		"":                             "",
	} {
		assert.Equal(t, want, classRead(in), "classRead(%q)", in)
	}
}
