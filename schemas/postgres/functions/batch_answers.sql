-- A fast path's answers to a batch (record_sales, record_first_payments): one element per item of
-- the batch, the answer written for it at its position and NULL for each item left to the one-by-one
-- function. written[g] is the answer of the item at positions[g].
CREATE OR REPLACE FUNCTION batch_answers(written jsonb[], positions int[], item_count int) RETURNS jsonb[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT array_agg(w.answer ORDER BY n)
    FROM generate_series(1, item_count) AS n
    LEFT JOIN unnest(written, positions) AS w (answer, position) ON w.position = n
$$;
