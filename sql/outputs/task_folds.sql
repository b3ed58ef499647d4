-- The scored sessions dealt into `${folds}` folds by task (`${group}`, an expression over
-- `session`), the sessions of one task in one fold: `session`, `failed`, `task`, `fold`.
-- Tasks are dealt in the order of their hash, so folds hold about as many tasks each.
-- Used by `score --folds` and `risk`, so both split alike.
WITH scored AS (SELECT session, failed, ${group} AS task FROM scored_sessions),
tasks AS (
    SELECT task, CAST((row_number() OVER (ORDER BY key_hash(task), task) - 1) % ${folds} AS BIGINT) + 1 AS fold
    FROM (SELECT DISTINCT task FROM scored)
)
SELECT s.session, s.failed, s.task, t.fold FROM scored s JOIN tasks t ON t.task IS NOT DISTINCT FROM s.task
