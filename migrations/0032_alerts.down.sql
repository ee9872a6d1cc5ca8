BEGIN;

DROP TABLE alert_deliveries;
DROP TABLE alert_events;
DROP TABLE alert_states;
DROP TABLE alert_channels;
DROP TABLE alert_rules;

COMMIT;
