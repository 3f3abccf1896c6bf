-- sale_events is the sale path's hot table, as clicks is the click path's (0002). Its foreign-key
-- checks were about a twelfth of PostgreSQL's CPU per sale (perf, docs/performance.md), each a
-- statement of its own share-locking the program, customer and partner rows, which concurrent
-- sales of one program then contend for. record_sale takes these ids from the program it was
-- called for and the customer row it holds locked in the same transaction, which guarantees them;
-- nothing in the service deletes programs, customers or partners.
ALTER TABLE sale_events DROP CONSTRAINT sale_events_program_id_fkey;
ALTER TABLE sale_events DROP CONSTRAINT sale_events_customer_id_fkey;
ALTER TABLE sale_events DROP CONSTRAINT sale_events_partner_id_fkey;
