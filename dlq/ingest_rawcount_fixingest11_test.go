package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixIngest11RawFormStoredBeforeLostRaceCounted: an insert that
// stores a raw form and then loses a lock race (on another raw form) is
// tried again at once (tryInsert); the retry skips what is stored and,
// when the raw form's record shares a statement with a stored row that
// the unique index finds first, never refuses that record again, so it
// did not report it: quarantine_ingest_raw_form_total counted one raw form
// of the two stored. Store.Insert now reports the raw forms it stored
// before its error, and the ingester counts each record once.
func TestFixIngest11RawFormStoredBeforeLostRaceCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE SEQUENCE test_racer_fi11;
        CREATE FUNCTION test_raw_race_fi11() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.subject NOT LIKE '%.refused' AND NEW.subject NOT LIKE '%.racer' THEN
                RETURN NEW;
            END IF;
            IF NOT 'raw_form' = ANY(NEW.flags) THEN
                RAISE EXCEPTION 'parsed form refused' USING ERRCODE = '22023';
            END IF;
            IF NEW.subject LIKE '%.racer' THEN
                CASE nextval('test_racer_fi11')
                WHEN 1 THEN RAISE EXCEPTION 'raw form refused once' USING ERRCODE = '22023'; -- splits the raw forms
                WHEN 2 THEN RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01';      -- after the other one is stored
                ELSE NULL;
                END CASE;
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_raw_race_fi11 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_raw_race_fi11();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 1, MaxWait: 300 * time.Millisecond}
	b.start(t, cfg, nil).stop()

	// In this order: the retry's halves are [healthy-1, refused], which the
	// unique index refuses on healthy-1 before the trigger sees refused,
	// and [healthy-2, racer].
	for _, s := range []string{"healthy-1", "refused", "healthy-2", "racer"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search." + s, Data: []byte(s)})
	}
	r := b.start(t, cfg, nil)

	wait.Until(t, "all four stored and acked", time.Minute, func() bool {
		info := b.consumerInfo(t)
		return countRows(t, b.db.Pool, "true") == 4 && info.NumAckPending == 0 && info.NumPending == 0
	})
	require.Equal(t, 2, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"))
	require.GreaterOrEqual(t, sumCounterVec(t, r.metrics.StoreConflicts), 1.0, "the insert lost a race, as the test means it to")
	assert.Equal(t, 2.0, sumCounterVec(t, r.metrics.RawForm), "each raw form stored counted once")
}
