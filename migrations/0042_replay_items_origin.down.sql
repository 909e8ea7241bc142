ALTER TABLE replay_items
    DROP COLUMN origin_tenant,
    DROP COLUMN origin_msg_id,
    DROP COLUMN origin_generation;
