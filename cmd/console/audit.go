package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
)

const auditUsage = `usage: console audit <command> [flags]

commands:
  verify      check the hash chain, every checkpoint signature, and anchors;
              with --file, an export (JSON Lines or CSV) instead
              (exit 1: it does not verify; 3: an export's unproven entries;
              4: the check could not be made, e.g. the database unreachable
              or no public key given; 5: an export not signed itself)
  checkpoint  sign the chain's head now (before maintenance, for example)
  keygen      write a new Ed25519 checkpoint signing key and its public key
`

// runAudit dispatches the "console audit" commands.
func runAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "audit", auditUsage, map[string]command{
		"verify":     runAuditVerify,
		"checkpoint": runAuditCheckpoint,
		"keygen": func(_ context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
			return runAuditKeygen(args, getenv, stdout, stderr)
		},
	}, args, getenv, stdout, stderr)
}

// runAuditVerify is "console audit verify": it walks the hash chain, checks
// every checkpoint's signature with the public keys it trusts (verifyKeys)
// and every anchor, prints the result with the head hash, and exits 1
// naming the first problem; 4 when the check could not be made
// (exitUnchecked), no public key to check the checkpoints' signatures
// included.
func runAuditVerify(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn, keyFiles, signingKey, anchors, file string
	var opts audit.VerifyOptions
	var acceptUnproven, acceptUnsigned bool
	var every int
	var interval time.Duration
	s := newSettings("audit verify", getenv, stderr)
	s.integer(&every, "audit-checkpoint-every", "AUDIT_CHECKPOINT_EVERY", 1000, "warn when more entries than this follow the newest checkpoint (serve's setting)", 1, 10_000_000)
	s.duration(&interval, "audit-checkpoint-interval", "AUDIT_CHECKPOINT_INTERVAL", 5*time.Minute, "warn when entries stayed unsigned longer than this (serve's setting)", time.Second, 24*time.Hour)
	s.str(&file, "file", "AUDIT_EXPORT_FILE", "", "an export (JSON Lines or CSV, told apart by its first bytes) to check instead of the database: "+
		"its own signature, its entries' hashes and links, and its signed chain head", nil)
	s.boolean(&acceptUnproven, "accept-unproven-pre-v3", "AUDIT_VERIFY_ACCEPT_UNPROVEN_PRE_V3",
		"with --file: exit 0 although some entries are unproven (they come before a stub of an entry appended before hash version 3, "+
			"whose hash cannot be recomputed); without it such an export exits 3")
	s.boolean(&acceptUnsigned, "accept-unsigned", "AUDIT_VERIFY_ACCEPT_UNSIGNED",
		"with --file: exit 0 for an unfiltered export without a signature of its own (an older console's, from before exports were signed), "+
			"whose newest entries may have been cut off with nothing to tell; without it such an export exits 5")
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (read access is enough)", func(v string) error {
		if file != "" {
			return nil // an export is checked without the database
		}
		return checkPostgresURL(v)
	})
	s.str(&keyFiles, "public-key", "AUDIT_PUBLIC_KEYS", "", "PEM files of the public keys checkpoints may be signed with, comma-separated (keep them outside the database); "+
		"on the command line, the only keys trusted", nil)
	s.str(&signingKey, "audit-signing-key", "AUDIT_SIGNING_KEY_FILE", "", "the signing key file: its public half is trusted too, as serve trusts it, unless --public-key alone is given", nil)
	s.str(&anchors, "anchor", "AUDIT_ANCHORS", "", "heads recorded elsewhere that the chain must still contain: seq:hash[,seq:hash...]", func(v string) error {
		for _, a := range splitList(v) {
			anchor, err := audit.ParseAnchor(a)
			if err != nil {
				return errors.New("must be seq:hash pairs, like 1234:9f86d081884c7d65...")
			}
			opts.Anchors = append(opts.Anchors, anchor)
		}
		return nil
	})
	if err := s.parse(args); err != nil {
		// A setting that cannot be taken (no DATABASE_URL, a malformed
		// anchor) means the check was not made: exit 4, never the 1 that
		// pages for tampering. Usage errors keep their 2.
		var coded *codedError
		if errors.Is(err, flag.ErrHelp) || errors.As(err, &coded) {
			return err
		}
		return unchecked(err)
	}
	if s.given("public-key") && !s.given("audit-signing-key") {
		signingKey = "" // an independent check: only the keys named
	}
	keys, err := verifyKeys(keyFiles, signingKey)
	if err != nil {
		return unchecked(err)
	}
	opts.Keys = keys
	if signingKey != "" {
		fmt.Fprintln(stderr, "console audit verify: warning: the keys trusted include this host's signing key (AUDIT_SIGNING_KEY_FILE): whoever can replace that file can sign a rewritten log; for an independent check give --public-key alone, with keys kept elsewhere")
	}
	if file != "" {
		if len(opts.Anchors) > 0 {
			return usageError(errors.New("--anchor checks the database's chain, not an export's; leave out --file or --anchor"))
		}
		return verifyExportFile(file, keys, acceptUnproven, acceptUnsigned, stdout, stderr)
	}
	conn, err := app.Connect(ctx, dsn)
	if err != nil {
		return unchecked(fmt.Errorf("connect to DATABASE_URL: %w", err))
	}
	defer conn.Close(context.Background())
	res, err := audit.Verify(ctx, conn, opts)
	if err != nil {
		return unchecked(fmt.Errorf("verify audit chain: %w", err))
	}
	fmt.Fprintln(stdout, res.String())
	for _, p := range res.Problems {
		if p != res.Problem {
			fmt.Fprintf(stdout, "  also: %s\n", audit.Printable(p))
		}
	}
	if n := res.ProblemCount - int64(len(res.Problems)); n > 0 {
		fmt.Fprintf(stdout, "  and %d more problems not listed\n", n)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stdout, "  warning: %s\n", audit.Printable(w))
	}
	// The entries are dated by the database's clock: a host whose clock
	// runs behind would not see that signing stopped.
	var dbNow time.Time
	if err := conn.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		return unchecked(fmt.Errorf("read the database's clock: %w", err))
	}
	// Without a key no checkpoint verifies, which says nothing of whether
	// the console is signing: no warning then.
	if w := staleCheckpointWarning(res, every, interval, dbNow); w != "" && res.Unchecked == "" {
		fmt.Fprintf(stdout, "  warning: %s\n", audit.Printable(w))
	}
	if res.Unchecked != "" {
		fmt.Fprintln(stderr, "console audit verify: give the checkpoint public key with --public-key FILE (or AUDIT_SIGNING_KEY_FILE)")
	}
	if res.Broken() && strings.Contains(res.Problem, "not one of the public keys given") {
		fmt.Fprintf(stderr, "console audit verify: the keys trusted were %s; after a rotation give every key in use (--public-key old.pub,new.pub)\n",
			strings.Join(keys.IDs(), ", "))
	}
	return verifyExit(res.Err())
}

// verifyExit is err, what a verification found, with its exit status:
// 1 (the default) for a problem, exitUnchecked for a check not made
// (audit.ErrNotChecked: signatures and no key to check them), which is
// no finding of tampering.
func verifyExit(err error) error {
	if errors.Is(err, audit.ErrNotChecked) {
		return unchecked(err)
	}
	return err
}

// staleCheckpointWarning says when the newest checkpoint that verified is
// older than serve's window (more than every entries after it, or entries
// unsigned for longer than interval and a minute for the scheduler's
// turn): entries after it are not vouched for, and the console may have
// stopped signing. "" when it is not.
func staleCheckpointWarning(res audit.Result, every int, interval time.Duration, now time.Time) string {
	if res.Rows == 0 {
		return ""
	}
	unsigned := res.HeadSeq - res.LastCheckpoint.Seq
	newest := "no checkpoint verifies"
	if res.Checkpoints > 0 {
		newest = fmt.Sprintf("the newest checkpoint that verifies is at seq %d", res.LastCheckpoint.Seq)
	}
	switch {
	case unsigned > int64(every):
		return fmt.Sprintf("%s, %d entries before the head: more than AUDIT_CHECKPOINT_EVERY (%d); is the console signing?", newest, unsigned, every)
	case !res.UnsignedSince.IsZero() && now.Sub(res.UnsignedSince) > interval+time.Minute:
		return fmt.Sprintf("%s; the entries after it have been unsigned since %s, longer than AUDIT_CHECKPOINT_INTERVAL (%s); is the console signing?",
			newest, res.UnsignedSince.Format(time.RFC3339), interval)
	}
	return ""
}

// verifyKeys is the set verify trusts: the public keys in keyFiles and,
// when signingKey names a key file, its public half. In serve's
// environment (AUDIT_PUBLIC_KEYS the earlier keys, AUDIT_SIGNING_KEY_FILE
// the current one) that is the set serve trusts, so an intact log verifies
// after a rotation. runAuditVerify leaves the signing key out when only
// --public-key is named on the command line: an independent check trusts
// only keys kept outside the console, never the key file on its host.
func verifyKeys(keyFiles, signingKey string) (*audit.KeySet, error) {
	keys, err := audit.LoadKeySet(splitList(keyFiles)...)
	if err != nil {
		return nil, fmt.Errorf("AUDIT_PUBLIC_KEYS (--public-key): %w", err)
	}
	if signingKey == "" {
		return keys, nil
	}
	signer, err := audit.LoadSigner(signingKey)
	if err != nil {
		return nil, fmt.Errorf("AUDIT_SIGNING_KEY_FILE (--audit-signing-key): %w", err)
	}
	return audit.TrustedKeys(signer, keys), nil
}

// csvExportStart is how a CSV export starts: its header's first cell. A
// JSON Lines export starts with "{".
const csvExportStart = "seq,"

// exitUnproven is the exit status of "console audit verify --file" for an
// export in which nothing is wrong but some entries are unproven: not 0,
// since the signed head does not vouch for them, and not 1, which says
// the export is broken.
const exitUnproven = 3

// exitUnchecked is the exit status of "console audit verify" when the
// check could not be made: the database could not be reached or read, the
// export or a key file could not be opened, or no public key was given to
// check the signatures the log or the export holds. Not 1, which says the log
// or the export was read and does not verify: a wrapper run from cron can
// page for tampering on 1 and for an outage on 4.
const exitUnchecked = 4

// unchecked is err, a check that could not be made, with exit status
// exitUnchecked.
func unchecked(err error) error { return &codedError{code: exitUnchecked, err: err} }

// exitUnsigned is the exit status of "console audit verify --file" for an
// export, checked with public keys, in which nothing is wrong but that
// carries no signature of its own. Not 0: its signed chain head proves
// the entries it holds, not that it held no later ones, so an export
// whose newest entries were cut off, ending at an earlier checkpoint's
// head, reads alike. Not 1: a console before exports were signed wrote
// such files, and they are no proof of tampering; no console since
// writes one (serve does not start without its signing key, and signs
// every export).
const exitUnsigned = 5

// verifyExportFile is "console audit verify --file": it checks an export,
// a CSV one (audit.VerifyExportCSV) when the file starts with the CSV
// header's first cell, else a JSON Lines one (audit.VerifyExport), prints
// the result and exits 1 naming the first problem (4 when it cannot be
// read, or when nothing is wrong but no public key was given to check its
// signatures); an export that
// verifies without a signature of its own (audit.ExportJSONLSigned,
// audit.ExportCSVSigned) gets a warning on stderr and exits 5, unless
// acceptUnsigned. An export that verifies but holds unproven entries
// (before a stub of an entry appended before hash version 3) exits 3
// saying how many and why, unless acceptUnproven.
func verifyExportFile(path string, keys *audit.KeySet, acceptUnproven, acceptUnsigned bool, stdout, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return unchecked(fmt.Errorf("audit export: %w", err))
	}
	defer f.Close()
	r := bufio.NewReader(f)
	verify := audit.VerifyExport
	if start, _ := r.Peek(len(csvExportStart)); string(start) == csvExportStart {
		verify = audit.VerifyExportCSV
	}
	res, err := verify(r, keys)
	if err != nil { // the file could not be read (what it holds is a problem, in res)
		return unchecked(err)
	}
	fmt.Fprintln(stdout, res.String())
	if res.Unchecked != "" {
		// Without a key nothing in the file is proven: an export that
		// verifies ends at a signed head, which takes a key to check.
		fmt.Fprintln(stderr, "console audit verify: give the checkpoint public key with --public-key FILE (the audit page's verify lists it): without it nothing in the file is proven")
		return verifyExit(res.Err())
	}
	if res.OK() && !res.ExportSigned {
		// The chain checks out to a signed head, but nothing signed says
		// the export ended there: only a filtered export is refused for
		// it (a problem, above), as its filter, start and stubs rest on
		// it too. An unfiltered one may be an older console's.
		fmt.Fprintln(stderr, "console audit verify: "+audit.UnsignedExportWarning)
		if !acceptUnsigned {
			return &codedError{code: exitUnsigned, err: fmt.Errorf("audit export: not signed itself, so nothing proves it ended at its chain head, seq %d: "+
				"entries after it may have been cut off its end; export the range again (every export the console writes now is signed), "+
				"check it against the database with console audit verify, or pass --accept-unsigned to accept an export an older console wrote", res.Head.Seq)}
		}
	}
	if err := res.Err(); err != nil || res.Unproven == 0 || acceptUnproven {
		return err
	}
	n := "1 entry is"
	if res.Unproven > 1 {
		n = fmt.Sprintf("%d entries are", res.Unproven)
	}
	return &codedError{code: exitUnproven, err: fmt.Errorf("audit export: %s unproven: they come before seq %d, a stub of an entry appended before hash version 3 "+
		"(it has no content digest, so its hash cannot be recomputed and the signed head does not vouch for what comes before it); "+
		"check them with console audit verify against the database or with an unfiltered export, "+
		"or pass --accept-unproven-pre-v3 to accept them", n, res.UnprovenStub)}
}

// runAuditCheckpoint is "console audit checkpoint": it signs the head now.
func runAuditCheckpoint(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn, keyFile, keyFiles, reason string
	s := newSettings("audit checkpoint", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (the runtime role may record checkpoints)", checkPostgresURL)
	s.str(&keyFile, "audit-signing-key", "AUDIT_SIGNING_KEY_FILE", "", "PEM file of the Ed25519 key that signs checkpoints", checkRequired)
	s.str(&keyFiles, "audit-public-keys", "AUDIT_PUBLIC_KEYS", "", "PEM files of the other keys whose checkpoints count as signed (earlier keys, and the next one during a rotation), comma-separated, as serve trusts them", nil)
	s.str(&reason, "reason", "AUDIT_CHECKPOINT_REASON", audit.ReasonOnDemand, fmt.Sprintf("why, as recorded with the checkpoint (at most %d bytes)", audit.MaxCheckpointReason), checkCheckpointReason)
	if err := s.parse(args); err != nil {
		return err
	}
	signer, err := audit.LoadSigner(keyFile)
	if err != nil {
		return fmt.Errorf("AUDIT_SIGNING_KEY_FILE (--audit-signing-key): %w", err)
	}
	others, err := audit.LoadKeySet(splitList(keyFiles)...)
	if err != nil {
		return fmt.Errorf("AUDIT_PUBLIC_KEYS (--audit-public-keys): %w", err)
	}
	conn, err := app.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	cp, found, err := audit.SignHead(ctx, conn, signer, others, reason)
	if err != nil {
		return err
	}
	if cp.Seq == 0 {
		fmt.Fprintln(stdout, "audit log is empty: nothing to sign")
		return nil
	}
	if found {
		// Said as what it is: an operator who signs before maintenance
		// must not read an older checkpoint as the one just made.
		fmt.Fprintf(stdout, "audit checkpoint: seq %d hash %s signed by key %s at %s (reason %q): the head was signed already, so nothing signed now and the reason given was not recorded (anchor: %d:%s)\n",
			cp.Seq, cp.HashHex(), cp.KeyID, cp.At.Format("2006-01-02T15:04:05Z"), cp.Reason, cp.Seq, cp.HashHex())
		return nil
	}
	fmt.Fprintf(stdout, "audit checkpoint: seq %d hash %s signed by key %s at %s (anchor: %d:%s)\n",
		cp.Seq, cp.HashHex(), cp.KeyID, cp.At.Format("2006-01-02T15:04:05Z"), cp.Seq, cp.HashHex())
	return nil
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkCheckpointReason refuses a reason audit.Record would refuse, at
// parse rather than after the key was read and the database connected.
func checkCheckpointReason(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("is required")
	}
	if len(v) > audit.MaxCheckpointReason {
		return fmt.Errorf("is %d bytes: at most %d", len(v), audit.MaxCheckpointReason)
	}
	return nil
}
