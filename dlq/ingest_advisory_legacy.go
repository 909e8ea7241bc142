package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
// exist and every subject it captures is one of this deployment's
// (advisoryStreamConfig): one holding another deployment's subjects too
// (two deployments on one NATS account shared it, the reason for the
// rename) is not, and the start is refused naming it. Nothing for the
// default DLQ_STREAM (its advisory stream has the old name), without
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
	ours := in.advisoryStreamConfig().Subjects
	var mine, others []string
	for _, subj := range legacy.CachedInfo().Config.Subjects {
		if slices.Contains(ours, subj) {
			mine = append(mine, subj)
		} else {
			others = append(others, subj)
		}
	}
	switch {
	case len(mine) == 0:
		return nil // another deployment's (or nobody's): ours is made beside it
	case len(others) > 0:
		return fmt.Errorf("stream %s (the advisory stream of every console before this release) captures advisories of DLQ_WATCH_STREAMS %v and of streams this deployment does not watch %v: "+
			"another deployment on this NATS account shares it, so this console does not take it over, and JetStream refuses %s on the same subjects; "+
			"see docs/runbook.md, \"subjects overlap\"", LegacyAdvisoryStream, mine, others, in.cfg.AdvisoryStream)
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
