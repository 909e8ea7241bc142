package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClassReadLabelsTheLeadingClass: a rule's reason that begins with a
// class's key begins with its label on the page; a word that only looks
// like a key is left as it is. (A key further on is relabelled too:
// TestClassReadLabelsAClassKeyInsideAReason.)
func TestClassReadLabelsTheLeadingClass(t *testing.T) {
	for in, want := range map[string]string{
		"same_operation: replay request 1 already holds this dead letter":                                                "same operation: replay request 1 already holds this dead letter",
		`same_operation (its error class "x" replays at least as same_operation, stricter than dedupe): no operation id`: `same operation (its error class "x" replays at least as same operation, stricter than dedupe): no operation id`,
		"manual: one item per request": "manual: one item per request",
		`type "REPLAY a" to confirm`:   `type "REPLAY a" to confirm`,
		"same_operation is the class":  "same operation is the class",
		"not_a_class: something":       "not_a_class: something",
		"":                             "",
	} {
		assert.Equal(t, want, classRead(in), "classRead(%q)", in)
	}
}

// TestClassReadLabelsAClassKeyInsideAReason: a class key in the middle of
// a rule's reason reads as its chip does, as one at the start does; one
// that is part of a longer name (an item type, a subject, another word)
// or inside quotes (a message id or a phrase the producer chose) is left
// exactly as it is.
func TestClassReadLabelsAClassKeyInsideAReason(t *testing.T) {
	for in, want := range map[string]string{
		"error class unknown_effect replays at least as same_operation: no operation id":      "error class unknown_effect replays at least as same operation: no operation id",
		"an item of class same_operation needs its operation id (same_operation).":            "an item of class same operation needs its operation id (same operation).",
		`type "REPLAY same_operation" to confirm a same_operation replay`:                     `type "REPLAY same_operation" to confirm a same operation replay`,
		`message "a\"same_operation" of item type email.same_operation is not_same_operation`: `message "a\"same_operation" of item type email.same_operation is not_same_operation`,
		"subject app.same_operation-x and same_operation2 stay":                               "subject app.same_operation-x and same_operation2 stay",
	} {
		assert.Equal(t, want, classRead(in), "classRead(%q)", in)
	}
}
