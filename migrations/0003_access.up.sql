-- Server-side sessions (alexedwards/scs pgxstore layout).
CREATE TABLE sessions (
    token  text        PRIMARY KEY,
    data   bytea       NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);
COMMENT ON TABLE sessions IS 'Login sessions; rows past expiry are deleted by the session store''s cleanup.';

-- Casbin policy lines (p: role, tenant, object, action). Role bindings are
-- kept apart in role_bindings and given to Casbin as g lines.
CREATE TABLE casbin_rule (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ptype text NOT NULL,
    v0    text NOT NULL DEFAULT '',
    v1    text NOT NULL DEFAULT '',
    v2    text NOT NULL DEFAULT '',
    v3    text NOT NULL DEFAULT '',
    v4    text NOT NULL DEFAULT '',
    v5    text NOT NULL DEFAULT '',
    CONSTRAINT casbin_rule_unique UNIQUE (ptype, v0, v1, v2, v3, v4, v5)
);
COMMENT ON TABLE casbin_rule IS 'Casbin p lines: role, tenant pattern (* = all), object pattern, action. Seeded with the built-in roles.';

INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES
    ('p', 'viewer',   '*', 'deadletter', 'read'),
    ('p', 'oncall',   '*', 'deadletter', 'read'),
    ('p', 'oncall',   '*', 'deadletter', 'download'),
    ('p', 'oncall',   '*', 'deadletter', 'discard'),
    ('p', 'oncall',   '*', 'deadletter', 'resolve'),
    ('p', 'oncall',   '*', 'replay:*',   'request'),
    ('p', 'oncall',   '*', 'replay:*',   'cancel'),
    ('p', 'approver', '*', 'deadletter', 'read'),
    ('p', 'approver', '*', 'deadletter', 'download'),
    ('p', 'approver', '*', 'replay:*',   'approve'),
    ('p', 'approver', '*', 'replay:*',   'reject'),
    ('p', 'auditor',  '*', 'deadletter', 'read'),
    ('p', 'auditor',  '*', 'audit',      'read'),
    ('p', 'auditor',  '*', 'audit',      'export'),
    ('p', 'admin',    '*', 'bindings',   'read'),
    ('p', 'admin',    '*', 'bindings',   'manage'),
    ('p', 'admin',    '*', 'policy',     'read'),
    ('p', 'auditor',  '*', 'policy',     'read'),
    ('p', 'approver', '*', 'policy',     'read'),
    ('p', 'oncall',   '*', 'policy',     'read');

CREATE TABLE role_bindings (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject     text        NOT NULL,
    role        text        NOT NULL,
    tenant      text        NOT NULL,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT role_bindings_unique UNIQUE (subject, role, tenant),
    CONSTRAINT role_bindings_role_check CHECK (role IN ('viewer', 'oncall', 'approver', 'auditor', 'admin')),
    CONSTRAINT role_bindings_subject_check CHECK (subject LIKE 'user:%' OR subject LIKE 'email:%')
);
COMMENT ON COLUMN role_bindings.subject IS 'user:<issuer>|<subject> for one identity, or email:<address> matching a verified email claim.';
COMMENT ON COLUMN role_bindings.tenant IS 'Tenant the role applies to, or * for all tenants.';

-- Every replica reloads its enforcer when a binding or policy line changes.
CREATE FUNCTION notify_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('quarantine_access_changed', TG_TABLE_NAME);
    RETURN NULL;
END $$;
CREATE TRIGGER role_bindings_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON role_bindings
    FOR EACH STATEMENT EXECUTE FUNCTION notify_access_changed();
CREATE TRIGGER casbin_rule_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON casbin_rule
    FOR EACH STATEMENT EXECUTE FUNCTION notify_access_changed();
