package dlq

import "testing"

// TestRevTriage30TextSearchNeedsAWord: a text search is taken only when
// it holds a word of MinTextSearch letters or digits, from which pg_trgm
// takes a trigram to look up; "..." or "a.b.c" has none, and PostgreSQL
// would read every entry of the trigram index, every dead letter of the
// scope, in each window of the search.
func TestRevTriage30TextSearchNeedsAWord(t *testing.T) {
	for text, want := range map[string]bool{
		"timed out": true, "abc": true, "a.b.c": false, "...": false, "%%%": false, "ab cd": false, "ab_cd": false,
		"  abc  ": true, "x-123": true, "支付失败": true, "é1": false, "ab": false, "": false, "_-_": false,
	} {
		if got := TextSearchable(text); got != want {
			t.Errorf("TextSearchable(%q) = %v, want %v", text, got, want)
		}
	}
}
