-- The JSON builders that the write functions (0012 to 0015) call were declared IMMUTABLE, but
-- jsonb_build_object is STABLE (a timestamptz's text depends on the session's TimeZone), so the
-- planner refused to inline them: each call inside an INSERT went through the SQL-function
-- executor, which parses and plans the body again for every statement that runs it. Declared
-- STABLE, as they are, they are inlined into the statement's own plan (docs/performance.md,
-- "PostgreSQL's work per sale, lead and refund").
ALTER FUNCTION sale_recorded_event(sale_events) STABLE;
ALTER FUNCTION customer_changed_event(customers, text) STABLE;
ALTER FUNCTION commission_event(commissions) STABLE;
ALTER FUNCTION platform_fee_event(platform_fees, commissions) STABLE;
ALTER FUNCTION customer_result(customers) STABLE;
ALTER FUNCTION processor_refused_sale(jsonb, bigint, text) STABLE;
