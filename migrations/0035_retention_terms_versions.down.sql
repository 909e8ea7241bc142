DROP TABLE retention_terms_rollback;
DROP TABLE retention_terms_versions;
