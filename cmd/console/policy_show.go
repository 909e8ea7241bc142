package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// runPolicyShow is "console policy show [VERSION] [--canonical]": what a
// replay policy version or retention terms version says, as the database
// recorded it when it was made active (and checked against the version),
// whatever file this host has. Without VERSION it shows the active replay
// policy and the active retention terms; VERSION names one of either kind
// as rollback takes it. --canonical prints the recorded text of VERSION
// alone, whose SHA-256 is that version; it needs VERSION (a usage error,
// exit status 2, without one), since the active replay policy and the
// active terms are two texts and two versions, and their texts run
// together would hash to neither.
func runPolicyShow(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var version string
	taken := false
	if n := len(args); n > 0 && !strings.HasPrefix(args[0], "-") {
		version, args, taken = args[0], args[1:], true
	} else if n > 1 && !strings.HasPrefix(args[n-1], "-") && !takesValue(args[n-2]) {
		// VERSION after the flags (--canonical abcdef12), as people type
		// it: the flag package would stop at it.
		version, args, taken = args[n-1], args[:n-1], true
	}
	if taken && strings.TrimSpace(version) == "" {
		// Typed from an empty variable ("$V"): never taken for no
		// VERSION, which shows the active one in its stead.
		fmt.Fprintln(stderr, "usage: console policy show [VERSION]: VERSION is empty; leave it out to show the active policy")
		return errUsage
	}
	var dsn string
	var canonical bool
	s := newSettings("policy show [VERSION]", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (the runtime role may do it)", checkPostgresURL)
	s.boolean(&canonical, "canonical", "POLICY_SHOW_CANONICAL", "print only VERSION's recorded text, exactly: its SHA-256 is VERSION (needs VERSION)")
	if err := s.parse(args); err != nil {
		return err
	}
	if canonical && version == "" {
		fmt.Fprintln(stderr, "usage: console policy show VERSION --canonical: --canonical prints one version's text, whose SHA-256 is VERSION; "+
			"`console policy status` names the active replay policy version and the active retention terms version")
		return errUsage
	}
	conn, err := app.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	var shown []replay.VersionContent
	if version != "" {
		v, err := replay.FindVersion(ctx, conn, version)
		if err != nil {
			return err
		}
		shown = append(shown, v)
	} else {
		rules, _, err := replay.PolicyStatus(ctx, conn)
		if err != nil {
			return err
		}
		terms, _, err := replay.RetentionStatus(ctx, conn)
		if err != nil {
			return err
		}
		if rules.Version == "" {
			fmt.Fprintln(stdout, "replay policy: none recorded yet (the first console or worker to start activates its file's version)")
		} else {
			v, err := replay.PolicyContent(ctx, conn, rules.Version)
			if err != nil {
				return err
			}
			shown = append(shown, v)
		}
		if terms.Version == "" {
			fmt.Fprintln(stdout, "retention terms: none recorded yet")
		} else {
			v, err := replay.TermsContent(ctx, conn, terms.Version)
			if err != nil {
				return err
			}
			shown = append(shown, v)
		}
	}
	for i, v := range shown {
		if canonical { // one version: VERSION was given
			if !v.Recorded() {
				return fmt.Errorf("%s %s: %s", v.Kind(), v.Version, v.NotRecorded())
			}
			fmt.Fprint(stdout, v.Text)
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printVersion(stdout, v)
	}
	return nil
}

// printVersion writes what "console policy show" says of v.
func printVersion(w io.Writer, v replay.VersionContent) {
	state := "active since " + rfc3339(v.ActivatedAt)
	if v.SupersededAt != nil {
		state = fmt.Sprintf("last active from %s, replaced at %s", rfc3339(v.ActivatedAt), rfc3339(*v.SupersededAt))
	}
	fmt.Fprintf(w, "%s %s (%s), %s, activated by %s\n", v.Kind(), v.Version, v.File, state, v.ActivatedBy)
	if !v.Recorded() {
		fmt.Fprintln(w, v.NotRecorded())
		return
	}
	fmt.Fprintf(w, "recorded by %s at %s; the text hashes to the version (console policy show %.12s --canonical | sha256sum)\n",
		v.RecordedBy, rfc3339(v.RecordedAt), v.Version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if v.Terms {
		fmt.Fprintf(tw, "tenant\titem type\t%s\n", strings.Join(replaypolicy.RetentionStatuses, "\t"))
		for _, l := range v.Retention.Lines() {
			keep := make([]string, len(l.Keep))
			for i, k := range l.Keep {
				keep[i] = k.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Tenant, l.ItemType, strings.Join(keep, "\t"))
		}
		return
	}
	t := v.Rules
	fmt.Fprintln(tw, "rules, first match wins:")
	fmt.Fprintln(tw, "  item type\tsubject\tclass")
	for _, r := range t.Rules() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", orAny(r.ItemType), orAny(r.Subject), r.Class)
	}
	fmt.Fprintln(tw, "classes:")
	for _, c := range t.Classes() {
		fmt.Fprintf(tw, "  %s\n", t.Describe(c.Class))
	}
	fmt.Fprintln(tw, "error classes:")
	for _, r := range t.ErrorRules() {
		fmt.Fprintf(tw, "  %s\n", t.DescribeErrorClass(r.ErrorClass))
	}
	fmt.Fprintf(tw, "generation limit: %d (from then on a dead letter is replayed only as manual)\n", t.GenerationLimit())
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

// takesValue says whether arg is policy show's one flag that takes a
// value in the next argument (--database-url URL).
func takesValue(arg string) bool {
	return arg == "--database-url" || arg == "-database-url"
}
