package dlq

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestRevGov25CloseAuditRowCommitsWithTheClose: a discard writes its
// audit row in the transaction that changes the dead letter (Close), so
// a close that does not commit leaves no audit row saying it happened.
// Here PostgreSQL refuses the close at commit (a deferred constraint
// trigger, as a check at commit would): the dead letter stays open, and
// the audit log holds no "ok" discard of it. An audit row appended on a
// connection of its own (committed apart) would say it was discarded.
func TestRevGov25CloseAuditRowCommitsWithTheClose(t *testing.T) {
	t.Parallel()
	b := newLetters(t)
	ctx := context.Background()
	ids := b.insert(t, letter{itemType: "search.index_update", msgID: "refuse-at-commit"})
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.msg_id = 'refuse-at-commit' AND NEW.status = 'discarded' THEN
                RAISE EXCEPTION 'refused at commit';
            END IF;
            RETURN NULL;
        END $$;
        CREATE CONSTRAINT TRIGGER test_refuse_at_commit AFTER UPDATE ON dead_letters
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_refuse_at_commit();`)
	require.NoError(t, err)

	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	_, err = b.store.Close(ctx, CloseInput{IDs: ids, Version: 1, To: StatusDiscarded, Reason: "poison", Tenants: []string{"acme"}},
		oncall, quarantine.RequestMeta{})
	require.Error(t, err, "PostgreSQL refused the close at commit")

	dl, err := b.store.Get(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, StatusQuarantined, dl.Status, "the close did not commit")
	var audited int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log
        WHERE action = 'deadletter.discard' AND outcome = 'ok' AND object_id = $1`, strconv.FormatInt(ids[0], 10)).Scan(&audited))
	assert.Zero(t, audited, "no audit row says dead letter %d was discarded: the discard did not commit", ids[0])
}
