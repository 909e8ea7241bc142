-- The authorization policy's version (docs/access.md, "Roles and bindings").
-- Each replica keeps the policy (casbin_rule and role_bindings) in memory
-- and reloads it when the LISTEN notification of a change arrives; until it
-- arrives, or while the listener's connection is lost, the replica would
-- answer from the policy it had: a removed binding would still let its
-- holder in. Every change of either table now also bumps this version in
-- its transaction, and every signed-in request reads it with its session
-- (the same statement): a request that finds a newer version than the
-- replica loaded reloads before anything is checked.

CREATE TABLE access_version (
    one     boolean PRIMARY KEY DEFAULT true,
    version bigint  NOT NULL,
    CONSTRAINT access_version_one_check CHECK (one)
);
COMMENT ON TABLE access_version IS 'One row: the version of the authorization policy (casbin_rule, role_bindings), bumped in the transaction of every change of either; a replica whose loaded policy is older reloads before it answers.';
INSERT INTO access_version (version) VALUES (1);

-- The runtime role only reads it; the bump runs as the owner of the
-- function (SECURITY DEFINER), in the transaction of the change.
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON access_version FROM quarantine_runtime;
GRANT SELECT ON access_version TO quarantine_runtime;

CREATE OR REPLACE FUNCTION notify_access_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.access_version SET version = version + 1;
    PERFORM pg_notify('quarantine_access_changed', TG_TABLE_NAME);
    RETURN NULL;
END $$;
