-- Migration 0050 stopped matching every email binding whose address is
-- not ASCII (it set unmatched_since): the people they named lost those
-- roles, and the audit log said nothing. This appends, for each binding
-- 0050 flagged that is still there, one audit entry as the console
-- itself (no actor, as a replay worker's): binding.unmatched, the binding
-- as it was in before and as it is in after (the keys of a binding.delete
-- entry's before), in the binding's tenant ('' for '*', as the console
-- records bindings), with a reason naming 0050 and what an admin does
-- about it. A binding an admin removed since has its binding.delete
-- entry already, whose before shows unmatched_since.
--
-- Written here, not by serve at start: a migration runs once, inside one
-- transaction with tern's lock, before any console of this schema
-- appends; a start-up writer would need a marker and a race between
-- replicas. The entries go through the chain exactly as audit.Append
-- writes them: under its advisory lock (audit/append.go appendLockKey,
-- 0x5141554449540001, so a console of the previous version appending
-- meanwhile waits), seq and prev_hash from the head, at never before the
-- head's, hash version 3 with a fresh 16-byte nonce, the content digest
-- and hash computed by audit_content_digest and audit_entry_hash
-- (migration 0038, which compute what package audit computes), and the
-- chain guard checks each row as it checks the console's.
DO $$
DECLARE
    b record;
    head record;
    e public.audit_log;
    binding jsonb;
BEGIN
    PERFORM pg_advisory_xact_lock(x'5141554449540001'::bigint);
    FOR b IN SELECT * FROM public.role_bindings WHERE unmatched_since IS NOT NULL ORDER BY id LOOP
        SELECT l.seq, l.hash, l.at INTO head FROM public.audit_log l ORDER BY l.seq DESC LIMIT 1;
        binding := jsonb_build_object(
            'ID', b.id, 'Subject', b.subject, 'Role', b.role, 'Tenant', b.tenant, 'CreatedBy', b.created_by,
            'AuthorIssuer', b.created_by_issuer, 'AuthorSubject', b.created_by_subject,
            'AuthorEmailVerified', b.created_by_email_verified,
            'CreatedAt', to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
        e := NULL;
        e.seq := COALESCE(head.seq, 0) + 1;
        e.at := GREATEST(clock_timestamp(), head.at);
        e.actor_issuer := '';
        e.actor_subject := '';
        e.actor_email := '';
        e.actor_email_verified := false;
        e.tenant := CASE WHEN b.tenant = '*' THEN '' ELSE b.tenant END;
        e.action := 'binding.unmatched';
        e.object_type := 'role_binding';
        e.object_id := b.id::text;
        e.message_id := '';
        e.operation_id := '';
        e.request_id := '';
        e.reason := left(format('migration 0050 stopped matching this binding on %s: %s holds %s in %s no more. '
            'Its address is not ASCII and was keyed by Unicode lower-casing, which merges mailboxes (docs/access.md); '
            'an admin removes it and binds the identity (issuer|subject) instead.',
            to_char(b.unmatched_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), b.subject, b.role,
            CASE WHEN b.tenant = '*' THEN 'every tenant' ELSE b.tenant END), 4096);
        e.outcome := 'ok';
        e.before := binding || jsonb_build_object('UnmatchedSince', NULL);
        e.after := binding || jsonb_build_object('UnmatchedSince',
            to_char(b.unmatched_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
        e.remote_addr := '';
        e.user_agent := '';
        e.prev_hash := head.hash;
        e.hash_version := 3;
        e.nonce := uuid_send(gen_random_uuid());
        e.content_digest := public.audit_content_digest(e);
        e.hash := public.audit_entry_hash(e);
        INSERT INTO public.audit_log (seq, at, actor_issuer, actor_subject, actor_email, actor_email_verified, tenant, action,
            object_type, object_id, message_id, operation_id, request_id, reason, outcome,
            before, after, remote_addr, user_agent, prev_hash, hash, hash_version, content_digest, nonce)
        VALUES (e.seq, e.at, e.actor_issuer, e.actor_subject, e.actor_email, e.actor_email_verified, e.tenant, e.action,
            e.object_type, e.object_id, e.message_id, e.operation_id, e.request_id, e.reason, e.outcome,
            e.before, e.after, e.remote_addr, e.user_agent, e.prev_hash, e.hash, e.hash_version, e.content_digest, e.nonce);
    END LOOP;
END $$;
