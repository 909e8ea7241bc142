DROP INDEX replay_requests_tenant_id_idx;
ALTER TABLE replay_requests
    DROP COLUMN approvals_needed,
    DROP COLUMN closed_by_email_verified,
    DROP COLUMN closed_by_email,
    DROP COLUMN closed_by_subject,
    DROP COLUMN closed_by_issuer;
