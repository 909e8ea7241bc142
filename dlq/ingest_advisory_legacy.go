package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// LegacyAdvisoryStream is the advisory capture stream of every console
// before the advisory stream was named after DLQ_STREAM (AdvisoryStreamOf),
// whatever its DLQ_STREAM.
const LegacyAdvisoryStream = "DLQ_ADVISORIES"

// adoptLegacyAdvisoryStream keeps a deployment with its own DLQ_STREAM on
// LegacyAdvisoryStream when that is still its advisory stream from before
// the upgrade. Such a stream captures the watched streams' advisory
// subjects, so JetStream refuses <DLQ_STREAM>_ADVISORIES on the same
// subjects (they overlap), and the advisories pending on it would be
// stranded: the console goes on consuming it instead, and says so once
// (README "Upgrades" and docs/runbook.md say how to move later: drain it,
// then delete it). It is adopted only when <DLQ_STREAM>_ADVISORIES does not
// exist and the stream is this deployment's: its metadata records this
// deployment as its owner (ingest_advisory_owner.go: a console that
// adopted it before recorded itself, so a later DLQ_WATCH_STREAMS with
// fewer streams still finds it its own), or it records none and captures
// some subjects of this deployment's streams and none of streams it does
// not know as its own (knownSubjects: its DLQ_WATCH_STREAMS, and those its
// running replicas announce). One recorded as another deployment's, or
// unrecorded and holding another's subjects too (two deployments on one
// NATS account shared it, the reason for the rename), is not, and the
// start is refused naming it (ErrAdvisoryStreamNotOurs) when it holds
// this deployment's subjects; one holding none of them is another's (or
// nobody's): this deployment's is made beside it. Setup's update then
// records this deployment as the owner of the one adopted
// (putStreamBack). Nothing for the default DLQ_STREAM (its advisory stream
// has the old name, and putStreamBack judges it the same way), without
// watched streams, or with an advisory stream given by name.
func (in *Ingester) adoptLegacyAdvisoryStream(ctx context.Context) error {
	if len(in.cfg.Watch) == 0 || in.cfg.AdvisoryStream == LegacyAdvisoryStream || in.cfg.AdvisoryStream != AdvisoryStreamOf(in.cfg.Stream) {
		return nil
	}
	if _, err := in.js.Stream(ctx, in.cfg.AdvisoryStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		if err != nil {
			return fmt.Errorf("look up stream %s: %w", in.cfg.AdvisoryStream, err)
		}
		return nil // moved already
	}
	legacy, err := in.js.Stream(ctx, LegacyAdvisoryStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", LegacyAdvisoryStream, err)
	}
	have := legacy.CachedInfo().Config
	mine, foreign, err := in.knownSubjects(ctx, LegacyAdvisoryStream, have.Subjects)
	if err != nil {
		return fmt.Errorf("judge whether stream %s is this deployment's: %w", LegacyAdvisoryStream, err)
	}
	want := in.advisoryStreamConfig()
	want.Name = LegacyAdvisoryStream
	switch owner := ownerOf(have); {
	case in.recordsUs(have):
	case len(mine) == 0:
		return nil // another deployment's (or nobody's): ours is made beside it
	case owner != "" && owner != in.cfg.Stream:
		return in.ownedElsewhere(have, want)
	case len(foreign) > 0:
		return fmt.Errorf("%w: stream %s (the advisory stream of every console before migration 0056) %s and captures advisories of DLQ_WATCH_STREAMS %v and of streams this deployment does not watch %v: "+
			"another deployment on this NATS account may share it, so this console does not take it over, and JetStream refuses %s on the same subjects; "+
			"if they are this deployment's own (an older DLQ_WATCH_STREAMS), start it once with them on the list; see docs/runbook.md, \"subjects overlap\"",
			ErrAdvisoryStreamNotOurs, LegacyAdvisoryStream, in.recordedAs(have), mine, foreign, in.cfg.AdvisoryStream)
	}
	if !in.adoptedLegacy {
		in.log.Warn("the advisory stream is still "+LegacyAdvisoryStream+", this deployment's from before the upgrade: the console goes on consuming it so that no pending advisory is left behind; "+
			"to move to the new name, see README \"Upgrades\"",
			"stream", LegacyAdvisoryStream, "new_name", in.cfg.AdvisoryStream, "dlq_stream", in.cfg.Stream, "subjects", mine)
	}
	in.adoptedLegacy = true
	in.cfg.AdvisoryStream = LegacyAdvisoryStream
	in.metrics.exportStreams(in.ingestStreams())
	return nil
}
