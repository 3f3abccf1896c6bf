-- The relay reads unrelayed events by writing transaction, then id.
DROP INDEX outbox_unrelayed;
CREATE INDEX outbox_unrelayed ON outbox (txid, id) WHERE relayed_at IS NULL;
