CREATE OR REPLACE FUNCTION notify_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('quarantine_access_changed', TG_TABLE_NAME);
    RETURN NULL;
END $$;

DROP TABLE access_version;
