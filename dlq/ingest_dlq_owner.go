package dlq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
)

// Which deployment the DLQ stream is for. A second deployment on the NATS
// account given a DLQ_SUBJECT_PREFIX of its own but left on the default
// DLQ_STREAM put its subjects on the first one's stream and pulled from
// its durable (one name, no filter): it stored about half of the other's
// dead letters in its own database and acked them, and its sweep stored
// the rest; the other stored them only through its sweep, and nothing
// refused the setup. So the console records its DLQ_SUBJECT_PREFIX in the
// DLQ stream's metadata (advisoryOwnerPrefixKey, as the advisory stream
// does) when it makes the stream, or stamps one that records none and
// holds its subjects, and each prefix it uses in its database
// (ingest_prefixes, migration 0077); it writes to, and consumes, no DLQ
// stream that records a prefix its database never used or, recording
// none, captures such a prefix's subjects and not its own:
// ErrDLQStreamNotOurs, naming what to do. A DLQ_SUBJECT_PREFIX change of
// one deployment (its database used the prefix recorded) is its own: the
// stream is stamped with the new one.
// (TestRev40SecondDeploymentOnTheDefaultDLQStreamIsRefused,
// TestFixIngest15PrefixChangeOfTheSameDeploymentIsItsOwn)

// ErrDLQStreamNotOurs says that the DLQ stream is another deployment's, or
// may be: the console does not write to it nor consume it.
var ErrDLQStreamNotOurs = errors.New("the DLQ stream is not this deployment's")

// Queries on ingest_prefixes (migration 0077).
const (
	usePrefix   = `INSERT INTO ingest_prefixes (stream, prefix) VALUES ($1, $2) ON CONFLICT DO NOTHING`
	usedPrefix  = `SELECT prefix FROM ingest_prefixes WHERE stream = $1`
	prefixesErr = "read the DLQ_SUBJECT_PREFIXes this deployment used (ingest_prefixes)"
)

// recordPrefix records that this deployment uses its prefix on DLQ
// stream name (ensureStream, at every setup: the stream made or found).
func (in *Ingester) recordPrefix(ctx context.Context, name string) error {
	if in.store == nil {
		return nil
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	if _, err := in.store.pool.Exec(ctx, usePrefix, name, in.cfg.Prefix); err != nil {
		return fmt.Errorf("record DLQ_SUBJECT_PREFIX %s (ingest_prefixes): %w", in.cfg.Prefix, err)
	}
	return nil
}

// notePrefix records this deployment's prefix on the DLQ stream
// (recordPrefix) unless it did already, and warns when it cannot.
func (in *Ingester) notePrefix(ctx context.Context) {
	if in.prefixRecorded.Load() {
		return
	}
	if err := in.recordPrefix(ctx, in.cfg.Stream); err != nil {
		in.log.Warn("the DLQ_SUBJECT_PREFIX this deployment uses could not be recorded in its database yet; tried again at every check", "stream", in.cfg.Stream, "err", err)
		return
	}
	in.prefixRecorded.Store(true)
}

// usedPrefixes returns the prefixes this deployment's consoles used on
// DLQ stream name; nil without a store (tests of the streams alone: every
// prefix is then taken for one used). Read only when the stream records,
// or captures, a prefix not this console's: a check of a stream plainly
// this deployment's reads nothing.
func (in *Ingester) usedPrefixes(ctx context.Context, name string) ([]string, error) {
	if in.store == nil {
		return nil, nil
	}
	ctx, cancel := in.store.within(ctx)
	defer cancel()
	rows, err := in.store.pool.Query(ctx, usedPrefix, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prefixesErr, err)
	}
	used, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prefixesErr, err)
	}
	return used, nil
}

// dlqStreamOthers is ErrDLQStreamNotOurs, explained, when DLQ stream have
// records a DLQ_SUBJECT_PREFIX this deployment never used, or records none
// and captures subjects of the console's shape (one token, then ".>") of
// such a prefix and not this one's; nil otherwise.
func (in *Ingester) dlqStreamOthers(ctx context.Context, have jetstream.StreamConfig) error {
	var used []string
	var readErr error
	read := false
	ours := func(prefix string) bool {
		if prefix == in.cfg.Prefix || in.store == nil {
			return true
		}
		if !read {
			used, readErr = in.usedPrefixes(ctx, have.Name)
			read = true
		}
		return slices.Contains(used, prefix)
	}
	fix := fmt.Sprintf("give this deployment a DLQ_STREAM of its own (a second deployment on one NATS account needs both DLQ_STREAM and DLQ_SUBJECT_PREFIX); "+
		"after a DLQ_SUBJECT_PREFIX change of the deployment that owns it, record the new prefix in the stream's metadata (%s): see docs/runbook.md, \"DLQ stream of another deployment\"",
		advisoryOwnerPrefixKey)
	if prefix := have.Metadata[advisoryOwnerPrefixKey]; prefix != "" {
		switch {
		case ours(prefix):
			return nil
		case readErr != nil: // not taken over, not refused for good: the check is made again
			return fmt.Errorf("judge whether stream %s, which records DLQ_SUBJECT_PREFIX %q, is this deployment's: %w", have.Name, prefix, readErr)
		}
		return fmt.Errorf("%w: stream %s records DLQ_SUBJECT_PREFIX %q, which this deployment (its database) never used, not its %q: two deployments on one DLQ stream share its durable %s and store each other's dead letters; %s",
			ErrDLQStreamNotOurs, have.Name, prefix, in.cfg.Prefix, in.cfg.Durable, fix)
	}
	// None recorded: this deployment's when it captures no other prefix's
	// subjects its database never used, its own or not (a stream holding
	// this prefix's and another's is shared already: stamped by whichever
	// upgraded first, it would lock the other out of its own stream).
	mine := in.cfg.Prefix + ".>"
	others := slices.DeleteFunc(slices.Clone(have.Subjects), func(s string) bool {
		token, ok := strings.CutSuffix(s, ".>")
		return !ok || token == "" || strings.ContainsAny(token, ".*>") || ours(token)
	})
	switch {
	case readErr != nil:
		return fmt.Errorf("judge whether stream %s, which captures %v, is this deployment's: %w", have.Name, have.Subjects, readErr)
	case len(others) == 0:
		return nil
	case slices.Contains(have.Subjects, mine):
		return fmt.Errorf("%w: stream %s records no DLQ_SUBJECT_PREFIX and captures %v besides this deployment's %s, prefixes its database never used: "+
			"another deployment shares it already (two deployments on one DLQ stream share its durable %s and store each other's dead letters); %s; "+
			"then take the other's subjects off and record the prefix by hand (docs/runbook.md, \"DLQ stream of another deployment\")",
			ErrDLQStreamNotOurs, have.Name, others, mine, in.cfg.Durable, fix)
	}
	return fmt.Errorf("%w: stream %s records no DLQ_SUBJECT_PREFIX and captures %v, not %s: it is likely another deployment's (two deployments on one DLQ stream share its durable %s and store each other's dead letters); %s",
		ErrDLQStreamNotOurs, have.Name, others, mine, in.cfg.Durable, fix)
}

// prefixSetting is the DLQ_SUBJECT_PREFIX recorded in the DLQ stream's
// metadata, held as the other settings are (streamSettings): one made
// before it existed is stamped by the first update (dlqStreamOthers has
// judged it this deployment's first), and so is one recording a prefix
// this deployment used before (a DLQ_SUBJECT_PREFIX change). The
// advisory stream's owner is ownerSetting's.
var prefixSetting = streamSetting{name: "prefix",
	value: func(c *jetstream.StreamConfig) string {
		return limitText(c.Metadata[advisoryOwnerPrefixKey] != "", c.Metadata[advisoryOwnerPrefixKey])
	},
	differs: func(have, want *jetstream.StreamConfig) bool {
		p := want.Metadata[advisoryOwnerPrefixKey]
		return ownerOf(*want) == "" && p != "" && have.Metadata[advisoryOwnerPrefixKey] != p
	},
	put: func(dst, want *jetstream.StreamConfig) bool {
		md := maps.Clone(dst.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		md[advisoryOwnerPrefixKey] = want.Metadata[advisoryOwnerPrefixKey]
		dst.Metadata = md
		return true
	},
	stopsLoss: true,
	fix:       `the stream is another deployment's DLQ stream: see docs/runbook.md, "DLQ stream of another deployment"`,
}
