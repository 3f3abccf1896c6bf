-- Created the processor payment's functions (record_processor_payment and its helpers), now in
-- functions/ (see 0012), and the index their lookup of waiting refunds needs.

-- The refunds waiting for a payment are looked up by every id known to pay its transaction
-- (record_processor_payment): without this index that lookup read all of processor_payment_refs
-- whenever any refund was waiting (157 ms at 200,000 ids on a loaded machine), on every payment.
CREATE INDEX processor_payment_refs_transaction ON processor_payment_refs (transaction_id);
