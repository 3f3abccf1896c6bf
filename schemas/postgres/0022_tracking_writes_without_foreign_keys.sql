-- The rows a lead, a sale or a refund writes besides the sale itself (0018): customers,
-- commissions, platform fees and refunds. Their foreign-key checks were a tenth of PostgreSQL's
-- CPU per refund (perf: AfterTriggerEndQuery), each a statement of its own that also share-locks
-- the parent row: the program's row for every lead, commission, fee and refund, which concurrent
-- writes of one program then turn into MultiXacts. The functions that insert these rows take the
-- ids from rows they hold locked in the same transaction (the click, the customer, the sale and
-- the commission they just wrote), which guarantees them, and nothing deletes programs, clicks,
-- customers or sales, so those cascades never had work to do.
--
-- The references to partners stay: removing a partner (an operator's act, outside the API) sets
-- its customers' partner to NULL, which the sale path answers with "partnerId required to create
-- commission", and is refused while the partner has commissions.
ALTER TABLE customers DROP CONSTRAINT customers_program_id_fkey;
ALTER TABLE customers DROP CONSTRAINT customers_click_id_fkey;
ALTER TABLE commissions DROP CONSTRAINT commissions_sale_id_fkey;
ALTER TABLE commissions DROP CONSTRAINT commissions_program_id_fkey;
ALTER TABLE commissions DROP CONSTRAINT commissions_customer_id_fkey;
ALTER TABLE platform_fees DROP CONSTRAINT platform_fees_sale_id_fkey;
ALTER TABLE platform_fees DROP CONSTRAINT platform_fees_commission_id_fkey;
ALTER TABLE platform_fees DROP CONSTRAINT platform_fees_program_id_fkey;
ALTER TABLE refunds DROP CONSTRAINT refunds_sale_id_fkey;
ALTER TABLE refunds DROP CONSTRAINT refunds_program_id_fkey;
