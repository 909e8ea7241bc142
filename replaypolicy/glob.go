package replaypolicy

import (
	"fmt"
	"slices"
	"strings"
)

// Item types are dot-separated tokens, like the NATS subjects they come from
// (dlq.<tenant>.<item_type...>). Patterns use the NATS wildcards, so an
// operator reads them the way they read subjects:
//
//	*   matches exactly one token:           "search.*" matches "search.index_update",
//	                                          not "search" and not "search.index.update"
//	>   as the last token, matches one or    "orders.>" matches "orders.refund" and
//	    more remaining tokens:                "orders.refund.partial", not "orders"
//
// Anything else in a token is matched literally. Wildcards are whole tokens
// ("search*" is an error), ">" is only allowed last, and "**" is rejected with
// a hint to use ">", so that no pattern means something other than what it
// looks like. Matching is case-sensitive.

const (
	maxPatternLen    = 256
	maxPatternTokens = 32
)

// pattern is a compiled item-type glob.
type pattern struct {
	raw  string
	toks []string // literal tokens and "*"; never ">"
	tail bool     // the pattern ended in ">": one or more further tokens
}

// compilePattern checks raw and compiles it. The error says what is wrong in
// a phrase that follows "item_type %q: ".
func compilePattern(raw string) (pattern, error) {
	if raw == "" {
		return pattern{}, fmt.Errorf("is empty")
	}
	if len(raw) > maxPatternLen {
		return pattern{}, fmt.Errorf("is longer than %d characters", maxPatternLen)
	}
	toks := strings.Split(raw, ".")
	if len(toks) > maxPatternTokens {
		return pattern{}, fmt.Errorf("has more than %d tokens", maxPatternTokens)
	}
	p := pattern{raw: raw}
	for i, tok := range toks {
		switch {
		case tok == "":
			return pattern{}, fmt.Errorf("has an empty token (a leading, trailing or doubled dot)")
		case tok == ">":
			if i != len(toks)-1 {
				return pattern{}, fmt.Errorf(`has ">" before the last token; ">" matches the rest and may only come last`)
			}
			p.tail = true
		case tok == "**":
			return pattern{}, fmt.Errorf(`uses "**", which is not supported; use ">" as the last token to match the rest`)
		case tok == "*":
			p.toks = append(p.toks, tok)
		case strings.ContainsAny(tok, "*>"):
			return pattern{}, fmt.Errorf("has token %q: wildcards must be whole tokens (* for one token, > for the rest)", tok)
		default:
			if r, ok := badTokenRune(tok); ok {
				return pattern{}, fmt.Errorf("has token %q with character %q; use letters, digits, _ and -", tok, r)
			}
			p.toks = append(p.toks, tok)
		}
	}
	return p, nil
}

// badTokenRune returns the first character of tok outside [A-Za-z0-9_-].
func badTokenRune(tok string) (rune, bool) {
	for _, r := range tok {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return r, true
		}
	}
	return 0, false
}

// namesItemType reports whether itemType has no empty token (none is
// empty: not the empty string, nor a leading, trailing or doubled dot).
func namesItemType(itemType string) bool {
	return !slices.Contains(strings.Split(itemType, "."), "")
}

// match reports whether itemType matches p. An item type with an empty token
// (empty string, leading, trailing or doubled dot) matches nothing, so it
// falls to manual.
func (p pattern) match(itemType string) bool {
	if !namesItemType(itemType) {
		return false
	}
	toks := strings.Split(itemType, ".")
	if p.tail {
		if len(toks) <= len(p.toks) {
			return false
		}
	} else if len(toks) != len(p.toks) {
		return false
	}
	for i, pt := range p.toks {
		if pt != "*" && pt != toks[i] {
			return false
		}
	}
	return true
}

// covers reports whether every item type that q matches is also matched by
// p, so that a rule with q placed after a rule with p can never be reached.
func (p pattern) covers(q pattern) bool {
	minQ := len(q.toks)
	if q.tail {
		minQ++
	}
	if p.tail {
		if minQ < len(p.toks)+1 {
			return false
		}
	} else if q.tail || len(q.toks) != len(p.toks) {
		return false
	}
	// Here q has at least len(p.toks) explicit tokens (a ">" adds at most
	// one to its minimum length), so q.toks[i] exists. A "*" in q is covered
	// only by a "*" in p.
	for i, pt := range p.toks {
		if pt != "*" && pt != q.toks[i] {
			return false
		}
	}
	return true
}

// intersect is the pattern of the item types both p and q match, when
// they overlap (a literal token where either has one, "*" where both
// have it, the longer one's tokens past the shorter's ">").
func (p pattern) intersect(q pattern) pattern {
	if len(p.toks) > len(q.toks) {
		p, q = q, p
	}
	out := pattern{toks: slices.Clone(q.toks), tail: q.tail}
	for i, pt := range p.toks {
		if out.toks[i] == "*" {
			out.toks[i] = pt
		}
	}
	out.raw = strings.Join(out.toks, ".")
	if out.tail {
		out.raw = strings.TrimPrefix(out.raw+".>", ".")
	}
	return out
}

// overlaps reports whether some item type matches both p and q, so that
// rules with p and q judge some items alike.
func (p pattern) overlaps(q pattern) bool {
	if len(p.toks) > len(q.toks) {
		p, q = q, p
	}
	// p has no more explicit tokens than q: they must agree where both
	// have one, and q's further tokens need p's ">".
	for i, pt := range p.toks {
		if pt != "*" && q.toks[i] != "*" && pt != q.toks[i] {
			return false
		}
	}
	if len(p.toks) == len(q.toks) {
		return p.tail == q.tail
	}
	return p.tail
}
