DROP TABLE user_settings;
DELETE FROM casbin_rule WHERE ptype = 'p' AND v0 = 'oncall' AND v1 = '*' AND v2 = 'deadletter' AND v3 = 'triage';
DROP TABLE group_triage;
