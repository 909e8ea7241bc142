package replaypolicy

import (
	"fmt"

	"github.com/quarantine-console/quarantine"
)

// noBulkWhy is why items of class (classed by union too) that allow no
// bulk are refused together: the one sentence of the bulk rule, at a draft
// (JudgeDraft) and where a page offers a replay of many (NoBulk).
func noBulkWhy(class Class, union []Class) string {
	return fmt.Sprintf("%s items cannot be replayed in bulk: request them one at a time", classNames(class, union))
}

// NoBulk says why no two dead letters of itemType with error class ec can
// ever go in one request under t, or "" when some may. It reads what only
// the item type and the error class decide: the classes the item-type
// rules may give it (manual where none without a subject matches) and
// the error class's min_class. What else classes an item (its target
// subject, its generation) only makes the class stricter, so "" may still
// end in a draft that blocks them; a sentence never is wrong. It is the
// bulk rule of JudgeDraft, asked before anything is selected, so that a
// page offers a replay of a group only where some of it could go.
func (t *Table) NoBulk(itemType, ec string) string {
	if t == nil {
		return ""
	}
	floor := t.ErrorRule(ec).MinClass
	why := ""
	for _, c := range t.typeClasses(itemType) {
		union := []Class{c}
		if floor != "" {
			union = unionOf(append(union, floor))
		}
		if t.UnionKnobs(union...).Bulk {
			return ""
		}
		if why == "" {
			class := c
			if floor != "" && Stricter(floor, c) {
				class = floor
			}
			why = noBulkWhy(class, union)
		}
	}
	return why
}

// typeClasses are the classes the item-type rules may give an item of
// itemType, in rule order: those of the rules that match it and name a
// subject (each for some subjects), up to the first that names none (for
// every other subject), or manual when none does (an item type stored
// shortened matches none: ClassOf).
func (t *Table) typeClasses(itemType string) []Class {
	var out []Class
	shortened := quarantine.IsBoundedKey(itemType)
	for i, p := range t.patterns {
		if p.raw == "" || shortened || !p.match(itemType) {
			continue
		}
		out = append(out, t.rules[i].Class)
		if t.subjects[i].raw == "" {
			return out
		}
	}
	return append(out, Manual)
}
