DROP TABLE authz_group_mappings;
