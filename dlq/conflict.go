package dlq

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// identityHeader is a header the contract reads a dead letter's identity,
// target or authority from: a replay publishes under it, to it, or
// re-checks it, so values of it that disagree leave the replay to a guess.
type identityHeader struct {
	name string // as the contract spells it
	// also is a header read in its place when it is not sent
	// (Upstream-Dlq-Replay-Of, as the producer helper renames
	// Dlq-Replay-Of); "" for none.
	also string
	// source is the source kind of the dead letters it is read from
	// (SourceDLQ, SourceAdvisory), "" for both.
	source string
	// exact reports that it is read only as spelled (Nats-Msg-Id:
	// JetStream's, which JetStream reads only so), not in another case
	// (contractView).
	exact bool
}

// identityHeaders are the headers whose values, when they disagree, are
// flagged conflicting:<field> at ingest and block a replay for a person
// (replaypolicy.CheckConflictingHeader): the one list, which ingest
// (conflictsSent), the rules' facts (ConflictsOf) and PostgreSQL
// (ConflictingHeadersOfD) read.
//
//	header                 read from          what a guess gets wrong
//	Dlq-Original-Subject   a dead letter      the subject the replay goes to
//	Dlq-Original-Msg-Id    a dead letter      the id the replay goes out under
//	Nats-Msg-Id            an advisory's      the id the replay goes out under
//	Dlq-Operation-Id       a dead letter      the id downstream dedupes the effect on
//	Dlq-Principal          a dead letter      whose authority a revalidate replay re-checks
//	Dlq-Replay-Of          both               the dead letter it came back from (its generation, its chain)
//
// An advisory's dead letter reads no other (upstreamContext): its
// operation id is the one the console sent with its replay, if any.
var identityHeaders = []identityHeader{
	{name: HeaderOriginalSubject, source: SourceDLQ},
	{name: HeaderOriginalMsgID, source: SourceDLQ},
	{name: HeaderNatsMsgID, source: SourceAdvisory, exact: true},
	{name: HeaderOperationID, source: SourceDLQ},
	{name: HeaderPrincipal, source: SourceDLQ},
	{name: HeaderReplayOf, also: UpstreamPrefix + HeaderReplayOf},
}

// FlagConflictingPrefix starts the flag of a dead letter whose values of an
// identity header (identityHeaders) disagree: conflicting:<field>, e.g.
// conflicting:operation_id.
const FlagConflictingPrefix = "conflicting:"

// flag is h's flag: conflicting:<field>.
func (h identityHeader) flag() string { return FlagConflictingPrefix + fieldOf(h.name) }

// Conflict is an identity header (identityHeaders) that a dead letter
// carries with values that disagree: the values as the contract reads one
// (CleanText; a Dlq-Replay-Of that is an id, as that id), each once, in
// the order the contract reads them (the first is the one stored), cut to
// conflictValueRunes characters and at most conflictValues of them, More
// saying how many others there are. Values is empty when the stored
// headers no longer show them (a dead letter kept in its raw form).
type Conflict struct {
	Header string
	Values []string
	More   int
}

const (
	// conflictValues is how many values a Conflict names: a producer may
	// send thousands, and a sentence names a few.
	conflictValues = 4
	// conflictValueRunes is how many characters of each value it keeps
	// (as short quotes them).
	conflictValueRunes = 80
)

// sentAs returns every value of h sent in hs (the headers as received, or
// as stored), in the order the contract reads them: under the contract's
// spelling first, then under each other spelling (spellings:
// otherSpellings of hs; none for an exact one) in the order of their
// names, as contractView reads them; then likewise the header read in its
// place (also).
func (h identityHeader) sentAs(hs, spellings map[string][]string) []string {
	var sent []string
	for _, name := range []string{h.name, h.also} {
		if name == "" {
			continue
		}
		sent = append(sent, hs[name]...)
		if h.exact {
			continue
		}
		for _, k := range spellings[name] {
			sent = append(sent, hs[k]...)
		}
	}
	return sent
}

// conflictOf returns the conflict of h's values sent (sentAs), or false
// when, read as the contract reads one value, they say one thing (or none
// was sent): the same value sent again, in any spelling of the name, is
// a duplicate (flagged duplicate:<field>), not a conflict.
func (h identityHeader) conflictOf(sent []string) (Conflict, bool) {
	said := newDistinct(conflictValues)
	for _, v := range sent {
		v = CleanText(v)
		if h.name == HeaderReplayOf {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
				v = strconv.FormatInt(n, 10) // " 12" and "12" name one dead letter (replayOf)
			}
		}
		said.add(v)
	}
	if said.count() < 2 {
		return Conflict{}, false
	}
	c := Conflict{Header: h.name, More: said.count() - len(said.first)}
	for _, v := range said.first {
		if utf8.RuneCountInString(v) > conflictValueRunes {
			v = string([]rune(v)[:conflictValueRunes]) + "…"
		}
		c.Values = append(c.Values, v)
	}
	return c, true
}

// conflictsSent returns the identity headers of a dead letter of source
// kind source whose values in h (the headers as received, every spelling)
// disagree, for flagConflicting; ParseDLQ and ParseAdvisory take them
// before contractView reads one spelling. spellings is otherSpellings(h).
func conflictsSent(h, spellings map[string][]string, source string) []Conflict {
	var out []Conflict
	for _, ih := range identityHeaders {
		if ih.source != "" && ih.source != source {
			continue
		}
		if c, ok := ih.conflictOf(ih.sentAs(h, spellings)); ok {
			out = append(out, c)
		}
	}
	return out
}

// flagConflicting flags conflicting:<field> for each identity header
// whose values disagree (cs, from conflictsSent), naming them. The first
// value (or the contract's spelling) is stored as before, and every value
// stays among the headers; the flag is what the replay rules read: a
// replay under the stored value is a guess at which one the consumer's
// effect ran under (replaypolicy.CheckConflictingHeader).
func (r *Record) flagConflicting(cs []Conflict) {
	for _, c := range cs {
		r.flag(identityHeaderOf(c.Header).flag(), "%s says %s, which disagree: the first (%s) is stored, but which one the consumer's effect "+
			"ran under is not known, so the replay rules leave it to a person", c.Header, c.said(), short(c.Values[0]))
	}
}

// said names c's values in a sentence: quoted, joined by "and", with how
// many more there are.
func (c Conflict) said() string {
	q := make([]string, 0, len(c.Values)+1)
	for _, v := range c.Values {
		q = append(q, strconv.Quote(v))
	}
	if c.More > 0 {
		q = append(q, strconv.Itoa(c.More)+" more")
	}
	return strings.Join(q, " and ")
}

// identityHeaderOf returns the entry of identityHeaders named name.
func identityHeaderOf(name string) identityHeader {
	for _, ih := range identityHeaders {
		if ih.name == name {
			return ih
		}
	}
	return identityHeader{name: name}
}

// ConflictsOf returns the conflicts a dead letter's flags name
// (conflicting:<field>), with the values its stored headers hs show:
// what the replay rules judge (replaypolicy.Item.Conflicting). The flags
// decide, as ingest set them; hs only names the values. hs are the
// headers ConflictingHeadersOfD selects (those identityHeaders names for
// the dead letter's source kind), or all of a dead letter published to
// the DLQ stream: one field (msg_id) is read from Dlq-Original-Msg-Id of
// the one and Nats-Msg-Id of the other, and the first in identityHeaders
// whose values disagree is named. A flagged field whose values hs does not
// show (a raw form) is named by its header, without values. nil when
// flags name none.
func ConflictsOf(flags []string, hs []HeaderValue) []Conflict {
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, FlagConflictingPrefix) }) {
		return nil
	}
	h := make(map[string][]string, len(hs))
	for _, v := range hs {
		name, err := decodeText(v.Name, v.NameEncoding)
		if err != nil {
			continue
		}
		if value, err := v.DecodedValue(); err == nil {
			h[name] = append(h[name], value)
		}
	}
	spellings := otherSpellings(h)
	var out []Conflict
	var named []string // flags named so far
	for _, ih := range identityHeaders {
		if !slices.Contains(flags, ih.flag()) || slices.Contains(named, ih.flag()) {
			continue
		}
		if c, ok := ih.conflictOf(ih.sentAs(h, spellings)); ok {
			out = append(out, c)
			named = append(named, ih.flag())
		}
	}
	for _, ih := range identityHeaders {
		if slices.Contains(flags, ih.flag()) && !slices.Contains(named, ih.flag()) {
			out = append(out, Conflict{Header: ih.name})
			named = append(named, ih.flag())
		}
	}
	return out
}

// ConflictingHeadersOfD is, in SQL, the stored headers (a JSON array of
// HeaderValue, in stored order) of the dead letter aliased d that
// ConflictsOf reads: those whose names, in any ASCII case, identityHeaders
// names for d's source kind, and only when d's flags name a conflict
// (conflicting:<field>); an empty array otherwise (and when d is NULL: a
// left join found nothing). The flags are what the rules judge; this only
// names the values, and is read of no dead letter without such a flag.
var ConflictingHeadersOfD = func() string {
	names := func(source string) string {
		var q []string
		for _, ih := range identityHeaders {
			if ih.source == "" || ih.source == source {
				for _, n := range []string{ih.name, ih.also} {
					if n != "" {
						q = append(q, "'"+strings.ToLower(n)+"'")
					}
				}
			}
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]"
	}
	var flags []string
	for _, ih := range identityHeaders {
		if f := "'" + ih.flag() + "'"; !slices.Contains(flags, f) {
			flags = append(flags, f)
		}
	}
	return `CASE WHEN d.flags && ARRAY[` + strings.Join(flags, ", ") + `]::text[] THEN coalesce((SELECT jsonb_agg(e.h ORDER BY e.n)
        FROM jsonb_array_elements(d.headers) WITH ORDINALITY AS e(h, n)
        WHERE coalesce(e.h->>'name_encoding', '') = ''
          AND lower(e.h->>'name' COLLATE "C") = ANY(CASE WHEN d.source_kind = '` + SourceAdvisory + `' THEN ` + names(SourceAdvisory) + `
                                                    ELSE ` + names(SourceDLQ) + ` END)), '[]') ELSE '[]' END`
}()

// distinct counts the distinct values added to it and keeps the first
// keep of them, in the order they came. A producer may send tens of
// thousands of values of one header: checking each against every value
// kept so far made a megabyte of distinct values cost seconds to parse,
// at ingest (one writer's whole batch waiting) and at every replay
// judgement (BenchmarkParseHostileHeaders).
type distinct struct {
	seen  map[string]struct{}
	first []string
	keep  int
}

func newDistinct(keep int) *distinct {
	return &distinct{seen: map[string]struct{}{}, keep: keep}
}

func (d *distinct) add(v string) {
	if _, ok := d.seen[v]; ok {
		return
	}
	d.seen[v] = struct{}{}
	if len(d.first) < d.keep {
		d.first = append(d.first, v)
	}
}

func (d *distinct) count() int { return len(d.seen) }
