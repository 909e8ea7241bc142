package dlq

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
// does) when it makes the stream, and writes to, and consumes, no DLQ
// stream recording another (ErrDLQStreamNotOurs, naming what to do). A
// DLQ_SUBJECT_PREFIX change is recorded by hand (docs/runbook.md): nothing
// a console holds tells it from a second deployment (a database restored
// from another's dump carries that one's history).
//
// A stream that records none (made before this release, or by hand) is
// stamped when it captures this prefix's subjects and no other subject of
// the console's shape (one token, then ".>"); one that captures others as
// well may be shared already, or hold a subject an operator added: it is
// used as before, unstamped, and the console warns at every setup (stamped
// by whichever deployment upgraded first, it would lock the other out of
// its own stream). One that captures none of this prefix's, made by a
// console (its description) and capturing another prefix's, is refused;
// one an operator made is this deployment's, as before.
// (TestRev40SecondDeploymentOnTheDefaultDLQStreamIsRefused,
// TestRev40SharedDLQStreamIsNotTakenByWhicheverUpgradesFirst)

// ErrDLQStreamNotOurs says that the DLQ stream is another deployment's, or
// may be: the console does not write to it nor consume it.
var ErrDLQStreamNotOurs = errors.New("the DLQ stream is not this deployment's")

// dlqStreamDescription is the description the console gives the DLQ
// stream it makes.
const dlqStreamDescription = "Dead letters for the Quarantine console"

// consoleShaped returns the subjects of c of the console's shape (one
// token, then ".>") but prefix's.
func consoleShaped(c jetstream.StreamConfig, prefix string) []string {
	return slices.DeleteFunc(slices.Clone(c.Subjects), func(s string) bool {
		token, ok := strings.CutSuffix(s, ".>")
		return !ok || token == "" || token == prefix || strings.ContainsAny(token, ".*>")
	})
}

// dlqStreamOthers is ErrDLQStreamNotOurs, explained, when DLQ stream have
// records another DLQ_SUBJECT_PREFIX, or records none, captures none of
// this prefix's subjects and was made by a console of another prefix; nil
// otherwise.
func (in *Ingester) dlqStreamOthers(have jetstream.StreamConfig) error {
	const fix = "give this deployment a DLQ_STREAM of its own (a second deployment on one NATS account needs both DLQ_STREAM and DLQ_SUBJECT_PREFIX); " +
		"after a DLQ_SUBJECT_PREFIX change of the deployment that owns it, record the new prefix in the stream's metadata (" + advisoryOwnerPrefixKey + "): " +
		"see docs/runbook.md, \"DLQ stream of another deployment\""
	if prefix := have.Metadata[advisoryOwnerPrefixKey]; prefix != "" {
		if prefix == in.cfg.Prefix {
			return nil
		}
		return fmt.Errorf("%w: stream %s records DLQ_SUBJECT_PREFIX %q, not this deployment's %q: two deployments on one DLQ stream share its durable %s and store each other's dead letters; %s",
			ErrDLQStreamNotOurs, have.Name, prefix, in.cfg.Prefix, in.cfg.Durable, fix)
	}
	mine := in.cfg.Prefix + ".>"
	others := consoleShaped(have, in.cfg.Prefix)
	if slices.Contains(have.Subjects, mine) || len(others) == 0 || have.Description != dlqStreamDescription {
		return nil
	}
	return fmt.Errorf("%w: stream %s, made by a console, records no DLQ_SUBJECT_PREFIX and captures %v, not %s: it is likely another deployment's (two deployments on one DLQ stream share its durable %s and store each other's dead letters); %s",
		ErrDLQStreamNotOurs, have.Name, others, mine, in.cfg.Durable, fix)
}

// sharedUnstamped warns, at every setup, when DLQ stream have records no
// DLQ_SUBJECT_PREFIX and captures subjects of the console's shape besides
// this prefix's: another deployment may share it (or an operator added
// them), so it is not stamped, and a second deployment on it is not
// refused.
func (in *Ingester) sharedUnstamped(have jetstream.StreamConfig) {
	if have.Metadata[advisoryOwnerPrefixKey] != "" {
		return
	}
	if others := consoleShaped(have, in.cfg.Prefix); len(others) > 0 {
		in.log.Warn("the DLQ stream records no DLQ_SUBJECT_PREFIX and captures subjects besides this deployment's: another deployment may share it (each would store the other's dead letters); "+
			"it is left unrecorded until the prefix is recorded by hand (docs/runbook.md, \"DLQ stream of another deployment\")",
			"stream", have.Name, "prefix", in.cfg.Prefix, "other_subjects", others)
	}
}

// prefixSetting is the DLQ_SUBJECT_PREFIX recorded in the DLQ stream's
// metadata, held as the other settings are (streamSettings): one made
// before it existed is stamped by the first update when it captures no
// subject of the console's shape but this prefix's (sharedUnstamped); one
// recording another is never taken over (dlqStreamOthers refuses it
// first). The advisory stream's owner is ownerSetting's.
var prefixSetting = streamSetting{name: "prefix",
	value: func(c *jetstream.StreamConfig) string {
		return limitText(c.Metadata[advisoryOwnerPrefixKey] != "", c.Metadata[advisoryOwnerPrefixKey])
	},
	differs: func(have, want *jetstream.StreamConfig) bool {
		p := want.Metadata[advisoryOwnerPrefixKey]
		return ownerOf(*want) == "" && p != "" && have.Metadata[advisoryOwnerPrefixKey] == "" && len(consoleShaped(*have, p)) == 0
	},
	put: func(dst, want *jetstream.StreamConfig) bool {
		p := want.Metadata[advisoryOwnerPrefixKey]
		if dst.Metadata[advisoryOwnerPrefixKey] != "" || len(consoleShaped(*dst, p)) > 0 {
			return false
		}
		md := maps.Clone(dst.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		md[advisoryOwnerPrefixKey] = p
		dst.Metadata = md
		return true
	},
	stopsLoss: true,
	fix:       `the stream's DLQ_SUBJECT_PREFIX is recorded by hand: see docs/runbook.md, "DLQ stream of another deployment"`,
}
