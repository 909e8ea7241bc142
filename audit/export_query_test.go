package audit

import "github.com/jackc/pgx/v5"

// FirstPageQuery is the statement List runs for the first page of f, for
// tests that read its plan.
func FirstPageQuery(f Filter) (string, pgx.NamedArgs) {
	conds, args, _ := f.where()
	args["limit"] = DefaultLimit + 1
	return selectEntries + whereSQL(conds) + newestFirst, args
}
