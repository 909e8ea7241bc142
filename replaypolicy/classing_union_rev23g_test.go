package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevPolicy23RaisedClassDropsItemTypeClassRules: DESIGN.md, "Replay
// semantics": an item's class is the strictest of what classes it, and the
// rules of every one of those classes apply (Classing.Union, Has: "a
// same_operation item type sent to a revalidate subject keeps its
// operation-id rules"). ClassOf never puts the item type's class in Union
// when it is the class at that point (Classing.add skips a class Has
// already reports, and Has reports Class itself); Classify then raises
// Class by the error class's min_class or by the generation limit, and the
// item type's class is in neither Class nor Union any more. Under the
// shipped policy (dev/policy.toml), an email.send dead letter
// (same_operation: the operation repeated exactly, never with an edited
// payload, never without an operation id) whose error class is "policy"
// (min_class revalidate), or that came back from 3 replays (manual), is
// judged with no same_operation rule at all: its payload may be edited
// (JudgeEditItem Go) and it replays edited, or without an operation id.
func TestRevPolicy23RaisedClassDropsItemTypeClassRules(t *testing.T) {
	t.Parallel()
	table, err := Load("../dev/policy.toml")
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		errorClass string
		generation int
		raised     Class
	}{
		"ByErrorClass": {errorClass: ErrPolicy, raised: Revalidate},
		"ByLoop":       {errorClass: ErrTransient, generation: 3, raised: Manual},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			item := testItem("email.send")
			item.OriginalSubject = "app.acme.email.send"
			item.ErrorClass, item.Generation = tc.errorClass, tc.generation

			c := table.Classify(Key{ItemType: item.ItemType, Subject: item.OriginalSubject, ErrorClass: item.ErrorClass, Generation: item.Generation})
			require.Equal(t, tc.raised, c.Class)
			require.Equal(t, SameOperation, c.TypeClass, "rule 5: email.send is same_operation")
			assert.Truef(t, c.Has(SameOperation), "the item type's class same_operation is not among the classes whose rules apply: Class %s, Union %v", c.Class, c.Union)

			edit := JudgeEditItem(table, item)
			assert.Equalf(t, Block, edit.Outcome, "the payload of a same_operation (email.send) item may be edited: %s %q", edit.Check, edit.Reason)

			noOp := item
			noOp.OperationID = ""
			v := JudgeItem(table, noOp, AtDraft)
			assert.Equalf(t, CheckNoOperationID, v.Check, "an email.send item without an operation id is judged %s (%s %q)", v.Outcome, v.Check, v.Reason)

			edited := item
			edited.PayloadEdited, edited.PayloadSHA256 = true, "ef56ab78"
			v = JudgeItem(table, edited, AtDraft)
			assert.NotEqualf(t, Go, v.Outcome, "an email.send item with an edited payload replays (%s)", v.Reason)
		})
	}
}
