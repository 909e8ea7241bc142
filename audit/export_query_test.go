package audit

import (
	"crypto/ed25519"
	"time"

	"github.com/jackc/pgx/v5"
)

// FirstPageQuery is the statement List runs for the first page of f, for
// tests that read its plan.
func FirstPageQuery(f Filter) (string, pgx.NamedArgs) {
	conds, args, _ := f.where()
	args["limit"] = DefaultLimit + 1
	return selectEntries + whereSQL(conds) + newestFirst, args
}

// ObjectRefusalsQuery is the statement Trail runs for an object's
// refusals, for tests that read its plan: its arguments are the object's
// type and id, the limit, the tenant and the dead letter id (or nil).
const ObjectRefusalsQuery = objectRefusals

// SignExportV1 is the signature a console wrote on a JSON Lines export
// before manifest version 2 (no chain head in it), for tests of files
// written then.
func SignExportV1(s *Signer, filter string, linesHash []byte, first, last int64, at time.Time) []byte {
	return ed25519.Sign(s.priv, exportManifest(1, linesHash, Checkpoint{}, filter, first, last, at, s.KeyID()))
}
