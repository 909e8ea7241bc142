DROP TABLE role_bindings;
DROP TABLE casbin_rule;
DROP FUNCTION notify_access_changed();
DROP TABLE sessions;
