-- The message, operation and correlation id filters of the dead-letter list
-- look a value up by equality only (dlq/query.go: condMsgID, ...). Their
-- B-trees on random keys were the dearest indexes of ingest after the
-- trigram one: each new row descended three trees at random places
-- (docs/BENCHMARKS.md, "Ingest": 20,500 rows/s with them against 30,400
-- without, in the same run). A hash index answers the same equality in one
-- bucket probe and takes a new row for about a fifth of the cost (27,600
-- rows/s). The tenant is no longer a key column: the list's tenant
-- condition is checked on the rows the probe finds, which an id rarely
-- shares across tenants.
DROP INDEX dead_letters_msg_id_idx;
DROP INDEX dead_letters_operation_id_idx;
DROP INDEX dead_letters_correlation_id_idx;
CREATE INDEX dead_letters_msg_id_idx ON dead_letters USING hash ((left(msg_id, 256)));
CREATE INDEX dead_letters_operation_id_idx ON dead_letters USING hash ((left(operation_id, 256))) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters USING hash ((left(correlation_id, 256))) WHERE correlation_id <> '';
