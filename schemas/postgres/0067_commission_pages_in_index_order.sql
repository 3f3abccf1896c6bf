-- Issue 33, point 9: a page of a program's commissions (newest first, ties by id) read in the
-- index's own order. On (program_id, created_at) the page needed a sort for the id; once
-- PostgreSQL kept the prepared statement's generic plan (after five executions) that sort took
-- every commission of the program before the first row: `?status=reversed` went from 1 to 230 ms
-- at 247,498 commissions (docs/performance.md, "The commission list's generic plan"). With the id
-- in the index the plan walks it and stops at the page's end. The same columns serve every reader
-- of the old index. Its key changes on no update, so a refund's updates stay HOT (0065).
CREATE INDEX commissions_program_time_id ON commissions (program_id, created_at, id);
DROP INDEX commissions_program_time;
