-- A refund's updates stay on their page (docs/performance.md, "Refunds and sales after the ledger").
-- PostgreSQL can update a row without new index entries (a HOT update) only when no index's columns
-- or predicate change and the page has room. A refund changes status on a sale, its commission and
-- its platform fee; commissions_due and commissions_held named status in their predicates, so every
-- refund wrote three more index entries for the commission, and full pages sent the sale's and the
-- fee's new versions to other pages with an entry in each of their indexes.
--
-- The hold's end: in_hold is set on a commission created pending and cleared by the sweeper
-- (approve_due_commissions) once available_at has passed, whatever became of it meanwhile; a
-- refund, a decision or a ban changes status, which no index reads.
ALTER TABLE commissions ADD COLUMN in_hold boolean NOT NULL DEFAULT false;
UPDATE commissions SET in_hold = true WHERE status = 'pending';
DROP INDEX commissions_due;
CREATE INDEX commissions_due ON commissions (available_at) WHERE in_hold;

-- The review queue: every commission ever held (held_at is kept after the decision), read with
-- status = 'held' (domain/fraud/reviews.ts).
DROP INDEX commissions_held;
CREATE INDEX commissions_held ON commissions (program_id, held_at, id) WHERE held_at IS NOT NULL;

-- Room for the one update most rows of these tables get (a refund's status, a conversion), so that
-- it stays on the row's page.
ALTER TABLE commissions SET (fillfactor = 90);
ALTER TABLE sale_events SET (fillfactor = 90);
ALTER TABLE platform_fees SET (fillfactor = 90);
ALTER TABLE customers SET (fillfactor = 90);
