package dlq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// Which deployment an advisory stream is for. Every replica of a
// deployment judges the advisories it pulls by its own database's
// ingest_watchers (whoseAdvisory) and takes off the stream the subjects no
// replica of it watches (dropUnwatched): two deployments on one NATS
// account pulling from one advisory stream (its one durable
// quarantine-ingest) ack each other's give-ups without a row and take
// each other's subjects off. Naming the advisory stream after DLQ_STREAM
// (AdvisoryStreamOf) keeps them apart only while no deployment keeps
// another name: one that adopted DLQ_ADVISORIES
// (adoptLegacyAdvisoryStream) holds the default deployment's name, and a
// second deployment left on the default DLQ_STREAM (only its
// DLQ_SUBJECT_PREFIX its own) has it too. So the console records the
// deployment an advisory stream is for in the stream's metadata (its
// DLQ_STREAM and its DLQ_SUBJECT_PREFIX) when it makes the stream or first
// puts its settings back on one made before the metadata existed, and
// never writes to a stream recorded as another's (putStreamBack refuses,
// naming that deployment: Setup stops, a check reports it). A stream
// recording this DLQ_STREAM with another prefix is this deployment's after
// a DLQ_SUBJECT_PREFIX change, or a second deployment's with the same
// DLQ_STREAM: it is judged as one recording no owner (claimable), and is
// not certainly this deployment's alone until it records this prefix
// (recordsUs).
const (
	// advisoryOwnerKey names the owning deployment's DLQ_STREAM.
	advisoryOwnerKey = "quarantine.dlq_stream"
	// advisoryOwnerPrefixKey is its DLQ_SUBJECT_PREFIX, to find it by.
	advisoryOwnerPrefixKey = "quarantine.dlq_subject_prefix"
)

// ErrAdvisoryStreamNotOurs says that an advisory stream is another
// deployment's on the NATS account (its metadata names it), or may be (it
// has no owner recorded and captures advisories of streams this
// deployment neither watches nor knows as its own): the console does not
// write to it nor consume it.
var ErrAdvisoryStreamNotOurs = errors.New("the advisory stream is not this deployment's")

// ownerMetadata is the metadata that records this deployment as the
// advisory stream's owner.
func (in *Ingester) ownerMetadata() map[string]string {
	return map[string]string{advisoryOwnerKey: in.cfg.Stream, advisoryOwnerPrefixKey: in.cfg.Prefix}
}

// ownerOf is the DLQ_STREAM of the deployment c's metadata records as the
// stream's owner; "" when none is recorded.
func ownerOf(c jetstream.StreamConfig) string { return c.Metadata[advisoryOwnerKey] }

// recordsUs reports whether advisory stream c records this deployment as
// its owner: its DLQ_STREAM, and its DLQ_SUBJECT_PREFIX or none (an
// owner recorded by hand, as the runbook says, names the DLQ_STREAM
// alone). Only then is it certainly this deployment's alone: a stream
// recording this DLQ_STREAM with another prefix may be a second
// deployment's with the same DLQ_STREAM.
func (in *Ingester) recordsUs(c jetstream.StreamConfig) bool {
	prefix, ok := c.Metadata[advisoryOwnerPrefixKey]
	return ownerOf(c) == in.cfg.Stream && (!ok || prefix == "" || prefix == in.cfg.Prefix)
}

// ownerSetting is the owner recorded in the advisory stream's metadata,
// a setting held as the others are (streamSettings): one made before it
// existed is stamped by the first update (claimable has judged it this
// deployment's first), this deployment's prefix is kept up to date (it
// only helps people find the deployment); one recorded as another's is
// never taken over.
var ownerSetting = streamSetting{name: "owner",
	value: func(c *jetstream.StreamConfig) string {
		return limitText(ownerOf(*c) != "", ownerOf(*c)+" (prefix "+c.Metadata[advisoryOwnerPrefixKey]+")")
	},
	differs: func(have, want *jetstream.StreamConfig) bool {
		return ownerOf(*want) != "" && (ownerOf(*have) != ownerOf(*want) || have.Metadata[advisoryOwnerPrefixKey] != want.Metadata[advisoryOwnerPrefixKey])
	},
	put: func(dst, want *jetstream.StreamConfig) bool {
		if owner := ownerOf(*dst); owner != "" && owner != ownerOf(*want) {
			return false
		}
		md := maps.Clone(dst.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		maps.Copy(md, want.Metadata)
		dst.Metadata = md
		return true
	},
	// With the subjects when an update is refused: a stream holding this
	// deployment's subjects unstamped could be taken for another's.
	stopsLoss: true,
	fix:       `the stream is another deployment's advisory stream: see docs/runbook.md, "advisory stream of another deployment"`,
}

// ownedElsewhere is the error for advisory stream have recorded as the
// advisory stream of another deployment; nil when it records this one or
// none (want: the console's configuration, with no owner for the DLQ
// stream, which this does not judge).
func (in *Ingester) ownedElsewhere(have, want jetstream.StreamConfig) error {
	if want.Name == in.cfg.Stream {
		return in.dlqStreamOthers(have)
	}
	owner := ownerOf(have)
	if ownerOf(want) == "" || owner == "" || owner == ownerOf(want) {
		return nil
	}
	return fmt.Errorf("%w: stream %s is the advisory stream of the deployment with DLQ_STREAM %s (DLQ_SUBJECT_PREFIX %s), as its metadata records; "+
		"this one's (DLQ_STREAM %s) would share it, and each would ack the other's give-ups without a row: "+
		"move that deployment to an advisory stream of its own (README \"Upgrades\"), or give this one a DLQ_STREAM of its own; see docs/runbook.md, \"advisory stream of another deployment\"",
		ErrAdvisoryStreamNotOurs, have.Name, owner, have.Metadata[advisoryOwnerPrefixKey], in.cfg.Stream)
}

// claimable returns nil when this deployment may write advisory stream
// have (want: the console's configuration for it; the DLQ stream, whose
// want records no owner, is judged by ownedElsewhere: dlqStreamOthers): it
// records this deployment as its
// owner (recordsUs), or none, or this DLQ_STREAM with another prefix, and
// every advisory subject it captures is one of a stream this deployment
// knows as its own (knownSubjects). Otherwise ErrAdvisoryStreamNotOurs,
// naming the other deployment or the subjects.
func (in *Ingester) claimable(ctx context.Context, have, want jetstream.StreamConfig) error {
	if ownerOf(want) == "" || (ownerOf(have) != "" && ownerOf(have) != ownerOf(want)) {
		return in.ownedElsewhere(have, want)
	}
	if in.recordsUs(have) {
		return nil
	}
	_, foreign, err := in.knownSubjects(ctx, have.Name, have.Subjects)
	if err != nil {
		return fmt.Errorf("judge whether stream %s, which %s, is this deployment's: %w", have.Name, in.recordedAs(have), err)
	}
	if len(foreign) > 0 {
		return fmt.Errorf("%w: stream %s %s and captures advisories of streams this deployment neither watches (DLQ_WATCH_STREAMS) "+
			"nor knows from a running replica %v: another deployment on this NATS account may share it, and each would ack the other's give-ups without a row; "+
			"if they are this deployment's own (an older DLQ_WATCH_STREAMS), start it once with them on the list (it records itself as the owner; take them off in a deploy after), "+
			"or record it by hand (metadata %s: %s, %s: %s); see docs/runbook.md, \"advisory stream of another deployment\"",
			ErrAdvisoryStreamNotOurs, have.Name, in.recordedAs(have), foreign, advisoryOwnerKey, in.cfg.Stream, advisoryOwnerPrefixKey, in.cfg.Prefix)
	}
	return nil
}

// recordedAs says what advisory stream c, not recorded as this
// deployment's (recordsUs), records: no owner, or this DLQ_STREAM with
// another prefix.
func (in *Ingester) recordedAs(c jetstream.StreamConfig) string {
	if ownerOf(c) == "" {
		return "records no owner (made before this release)"
	}
	return fmt.Sprintf("records DLQ_STREAM %s with DLQ_SUBJECT_PREFIX %s, not this deployment's %s (a second deployment with this DLQ_STREAM, or this one before a prefix change)",
		ownerOf(c), c.Metadata[advisoryOwnerPrefixKey], in.cfg.Prefix)
}

// knownSubjects splits the advisory subjects (of the console's shape) of
// subjects, those of advisory stream name, into those of streams this
// deployment knows as its own, its DLQ_WATCH_STREAMS and the streams its
// running replicas announce through name (ingest_watchers: a rolling
// deploy that takes one off), and the others. Any other subject (one an
// operator added) is in neither.
func (in *Ingester) knownSubjects(ctx context.Context, name string, subjects []string) (mine, foreign []string, err error) {
	known := make([]string, 0, len(in.cfg.Watch))
	for _, w := range in.cfg.Watch {
		known = append(known, w.Name)
	}
	streamOf := map[string]string{}
	unknown := false
	for _, subj := range subjects {
		if stream, ok := advisoryStreamOfSubject(subj); ok {
			streamOf[subj] = stream
			unknown = unknown || !slices.Contains(known, stream)
		}
	}
	if unknown && in.store != nil {
		announced, err := in.watchedThrough(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		known = append(known, announced...)
	}
	for _, subj := range subjects {
		switch stream, ok := streamOf[subj]; {
		case !ok:
		case slices.Contains(known, stream):
			mine = append(mine, subj)
		default:
			foreign = append(foreign, subj)
		}
	}
	return mine, foreign, nil
}

// advisoryStreamOurs reports whether the advisory stream records this
// deployment as its owner now (recordsUs): only then is it certainly not shared, and
// an advisory of a stream no replica of this deployment watches is
// certainly nobody's (whoseAdvisory).
func (in *Ingester) advisoryStreamOurs(ctx context.Context) (bool, error) {
	s, err := in.js.Stream(ctx, in.cfg.AdvisoryStream)
	if err != nil {
		return false, fmt.Errorf("look up stream %s: %w", in.cfg.AdvisoryStream, err)
	}
	return in.recordsUs(s.CachedInfo().Config), nil
}
