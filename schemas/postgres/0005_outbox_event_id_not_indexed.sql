-- event_id is gen_random_uuid() (122 random bits): unique by construction, and consumers, not
-- Postgres, deduplicate on it. Nothing reads the outbox by event_id, and inserting a random uuid
-- into a unique B-tree cost 15-20% of event write throughput.
ALTER TABLE outbox DROP CONSTRAINT outbox_event_id_key;
