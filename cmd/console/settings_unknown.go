package main

import (
	"context"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Every setting is read from an exact environment variable name, so a
// misspelt one (METRICS_TOKEN for METRICS_TOKEN_FILE, TRUSTED_PROXY for
// TRUSTED_PROXIES) would be ignored without a word, the deploy running on
// the default. At start each command warns of every variable set under
// one of the console's own prefixes that no command reads, naming the
// setting closest to it (unknownSettings).
//
// A warning, not a refusal: one environment is often shared by the
// commands and by other tools (an env file, a chart's values), a setting
// is added to it before the binary that reads it rolls out, or left in it
// after an upgrade took it away; refusing would turn each of those into
// an outage, while the warning names the variable at every start.

// commandsWithSettings are the command lines whose settings make up the
// console's (knownSettings): every command that takes any.
var commandsWithSettings = [][]string{
	{"serve"}, {"worker"}, {"migrate"}, {"demo"},
	{"audit", "verify"}, {"audit", "checkpoint"}, {"audit", "keygen"},
	{"policy", "status"}, {"policy", "show"}, {"policy", "rollback"},
	{"retention", "forget-stream"},
}

// foreignPrefixes are first words of the console's settings that other
// software sets variables under too: the nats CLI and client libraries
// (NATS_CREDS, NATS_CONTEXT...), database tools (DATABASE_HOST...), and
// generic LOG_ and TLS_ ones. A variable under them is taken for a slip
// only when it is at most foreignSlipEdits edits from a setting
// (NATS_URLS for NATS_URL: a serve that does not read NATS_URL runs its
// embedded server); the other tools' own names are further.
var foreignPrefixes = []string{"NATS", "DATABASE", "LOG", "TLS"}

// foreignSlipEdits is how many edits from a setting a variable under a
// foreign prefix may be to be warned of.
const foreignSlipEdits = 2

// serviceLink matches the variables Kubernetes sets for every service of
// the namespace (METRICS_SERVICE_HOST, METRICS_PORT_9464_TCP_ADDR...):
// not settings of anyone's.
var serviceLink = regexp.MustCompile(`_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// knownSettings returns the environment variables some command reads:
// each command's settings are declared (asked for their help, which
// neither connects nor writes) with a getenv that records the names asked
// for. Derived from the settings themselves, never a second list.
func knownSettings(ctx context.Context) []string {
	var names []string
	record := func(k string) string {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
		return ""
	}
	for _, c := range commandsWithSettings {
		_ = runCommand(ctx, append(append([]string{"console"}, c...), "-h"), record, io.Discard, io.Discard) // flag.ErrHelp, by design
	}
	slices.Sort(names)
	return names
}

// unknownSetting is a variable set under one of the console's prefixes
// that no setting reads, and the setting closest to its name.
type unknownSetting struct{ name, closest string }

// unknownSettings returns the variables of environ ("NAME=value", as
// os.Environ gives them) set (getenv gives them a value) under a prefix of
// the console's own settings (their first word) that none of known reads:
// under foreignPrefixes, only those a slip of a setting's name
// (foreignSlipEdits).
func unknownSettings(environ []string, getenv func(string) string, known []string) []unknownSetting {
	prefixes := map[string]bool{}
	for _, k := range known {
		if p, _, ok := strings.Cut(k, "_"); ok {
			prefixes[p] = true
		}
	}
	var out []unknownSetting
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		p, _, ok := strings.Cut(name, "_")
		if !ok || !prefixes[p] || slices.Contains(known, name) || serviceLink.MatchString(name) || getenv(name) == "" {
			continue
		}
		if slices.Contains(foreignPrefixes, p) && !slices.ContainsFunc(known, func(k string) bool { return replaypolicy.EditDistance(name, k) <= foreignSlipEdits }) {
			continue // another tool's, most likely
		}
		out = append(out, unknownSetting{name: name, closest: closestName(name, known)})
	}
	slices.SortFunc(out, func(a, b unknownSetting) int { return strings.Compare(a.name, b.name) })
	return slices.CompactFunc(out, func(a, b unknownSetting) bool { return a.name == b.name })
}

// warnUnknownSettings logs a warning for each of unknownSettings, through
// a logger as the command's own will be (LOG_LEVEL, LOG_FORMAT: a plain
// line would break a log read as JSON).
func warnUnknownSettings(ctx context.Context, environ []string, getenv func(string) string, stderr io.Writer) {
	if len(environ) == 0 {
		return
	}
	unknown := unknownSettings(environ, getenv, knownSettings(ctx))
	if len(unknown) == 0 {
		return
	}
	level, format := getenv("LOG_LEVEL"), getenv("LOG_FORMAT")
	if checkLogLevel(level) != nil {
		level = "info"
	}
	log := newLogger(stderr, level, format)
	for _, u := range unknown {
		log.Warn("environment variable "+u.name+" is set, but no setting of the console reads it: it is ignored (misspelt? did you mean "+u.closest+"?)",
			"variable", u.name, "closest_setting", u.closest)
	}
}

// closestName is the name of known that name is most likely a slip for:
// one that begins with name or that name begins with (METRICS_TOKEN for
// METRICS_TOKEN_FILE, a part left off), else the one least edits away
// (the first in order among equals).
func closestName(name string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		d := replaypolicy.EditDistance(name, k)
		if strings.HasPrefix(k, name) || strings.HasPrefix(name, k) {
			d -= 1 << 16 // before any other: a part left off or added
		}
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	return best
}
