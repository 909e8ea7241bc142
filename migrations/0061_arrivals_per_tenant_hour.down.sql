DROP TRIGGER dead_letter_arrivals_inserted ON dead_letter_arrivals;
DROP TRIGGER dead_letter_arrivals_updated ON dead_letter_arrivals;
DROP FUNCTION dead_letter_arrivals_inserted();
DROP FUNCTION dead_letter_arrivals_updated();
DROP TABLE dead_letter_arrivals_tenant_hour;
