DROP TABLE dead_letters_purged;
