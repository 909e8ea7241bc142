DROP TABLE dead_letter_counts;
DROP TABLE dead_letters;
DROP FUNCTION dead_letter_counts_apply();
