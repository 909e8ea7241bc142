package replaypolicy

// neverEdited says whether an item classed c never goes with an edited
// payload: any class of it (its union, Classing.Has) is same_operation,
// whose operation is repeated exactly, with the payload received. The
// edit is refused by it when asked for (JudgeEditItem, and
// MayEditPayload for a same_operation request), and an item that holds
// one all the same is refused by it at every later step (JudgeItem,
// CheckEdited).
func neverEdited(c Classing) bool {
	return c.Has(SameOperation)
}

// JudgeEditItem says whether the payload of item may be edited, judged on
// the item's own classing under t (Classify: every class of it, not only
// its request's class, which a stricter class of another rule may have
// set): never when neverEdited (Block, CheckEditClass, naming the class
// and the rule that made it same_operation), so that the edit is refused
// when it is asked for rather than kept and then refused at every later
// step; no table loaded refuses (CheckNoPolicy). Otherwise Go.
func JudgeEditItem(t *Table, item Item) Verdict {
	if t == nil {
		return Verdict{Rule: -1, Item: item}.plain(Block, CheckNoPolicy, "no replay policy is loaded, so nothing can be replayed")
	}
	c := t.Classify(Key{ItemType: item.ItemType, Subject: item.OriginalSubject, ErrorClass: item.ErrorClass, Generation: item.Generation})
	v := Verdict{Class: c.Class, Rule: c.Rule(), Classing: c, Item: item}
	if neverEdited(c) {
		return v.with(Block, CheckEditClass, "the payload of a same_operation item cannot be edited: the operation must be repeated exactly, with its original payload")
	}
	v.Outcome = Go
	return v
}
