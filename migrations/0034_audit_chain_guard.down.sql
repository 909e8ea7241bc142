DROP TRIGGER audit_log_continues_chain ON audit_log;
DROP FUNCTION audit_log_continues_chain();
DROP FUNCTION audit_entry_hash(public.audit_log);
DROP FUNCTION audit_hash_json(jsonb);
DROP FUNCTION audit_hash_field(bytea);
