-- clicks is the append-only hot table. Its foreign-key checks took a fifth of Postgres's time
-- under load, and concurrent inserts share-locking the same parent rows (one link, one program)
-- piled up MultiXacts. Each click is inserted by selecting from its referral link and program
-- in the same statement, which already guarantees the references.
ALTER TABLE clicks DROP CONSTRAINT clicks_program_id_fkey;
ALTER TABLE clicks DROP CONSTRAINT clicks_partner_id_fkey;
ALTER TABLE clicks DROP CONSTRAINT clicks_partner_program_id_fkey;
ALTER TABLE clicks DROP CONSTRAINT clicks_referral_link_id_fkey;
