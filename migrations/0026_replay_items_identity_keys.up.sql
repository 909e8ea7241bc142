-- The replay items of a message id, and of an operation id, by the exact
-- key of each (docs/replay.md, "Integrity"). A dedupe or
-- same_operation job asks, at its claim and again at its publish gate,
-- whether another job of its identity is unsettled or may have landed.
-- That question found the identity's dead letters first, through the hash
-- index of every partition of dead_letters (one probe per day kept, twice
-- per job: 60 days made dedupe replay a third as fast as rebuildable), and
-- their items from there. These indexes answer it from the items alone.
CREATE INDEX replay_items_msg_key_idx ON replay_items (quarantine_key(msg_id));
CREATE INDEX replay_items_operation_key_idx ON replay_items (quarantine_key(operation_id)) WHERE operation_id <> '';
