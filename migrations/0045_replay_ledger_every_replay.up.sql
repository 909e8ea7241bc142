-- The ledger holds every replay the broker stored, and every one a person
-- settled as applied (docs/replay.md, "Already replayed"). Its unique
-- indexes (migration 0017) kept one row per message id (dedupe_key rows)
-- and one per operation id (operation_key rows) in a tenant, and the
-- record's insert (ON CONFLICT DO NOTHING) dropped any other without a
-- word. But one identity may be replayed more than once: a dead letter
-- that came back from a replay is what that replay left undone, and is
-- replayed again (the Dlq-Replay-Of chain rule); a second replay of the
-- identity dropped from the ledger counted against nothing, and a sibling
-- that came back from the same failed replay was published again. The
-- indexes go: a row per replay job (its primary key) is what the ledger
-- keeps. Two replays of one identity are kept from being published at
-- once by the publish gate (dlq/replay/publish.go: the identities'
-- advisory locks, under which it reads the ledger and the jobs in flight
-- again), never by these indexes, which only decided which of two stored
-- replays the ledger forgot. The readers find an identity's rows by
-- replay_ledger_msg_idx and, for operation ids, through the items' key
-- indexes (migration 0026), and take the earliest one the item's chain
-- does not explain.
DROP INDEX replay_ledger_dedupe_key;
DROP INDEX replay_ledger_operation_key;
COMMENT ON COLUMN replay_ledger.dedupe_key IS 'The item was replayed under dedupe rules (its class or one of its union). A record of how it was judged only: several rows of one message id may hold it (migration 0045), and "already replayed" asks of every row, whatever its flags.';
COMMENT ON COLUMN replay_ledger.operation_key IS 'The item was replayed under same_operation rules (its class or one of its union). A record of how it was judged only: several rows of one operation id may hold it (migration 0045).';
COMMENT ON TABLE replay_ledger IS 'Append-only for the runtime role (SELECT, INSERT): one row per replay job the broker stored or a person settled as applied, several per identity when a returned dead letter was replayed again; the publish gate''s identity locks, not a unique key, keep two replays of one identity from being published at once.';
