-- `tracelake score --folds K`: per signal (and `(any)`) the failed and successful sessions
-- flagged in each fold of tasks (the query of `task_folds.sql`): the sessions of one
-- task fall in one fold, so a signal that holds only on some tasks shows it.
WITH folded AS (${task_folds}),
totals AS (
    SELECT fold, count(DISTINCT task) AS tasks,
        count(*) FILTER (WHERE failed) AS failed, count(*) FILTER (WHERE NOT failed) AS succeeded
    FROM folded
    GROUP BY fold
),
flagged AS (
    SELECT DISTINCT signal, session FROM findings
    UNION
    SELECT DISTINCT '(any)' AS signal, session FROM findings
),
per_fold AS (
    SELECT f.signal, s.fold,
        count(*) FILTER (WHERE s.failed) AS failed_flagged,
        count(*) FILTER (WHERE NOT s.failed) AS succeeded_flagged
    FROM flagged f JOIN folded s ON s.session = f.session
    GROUP BY f.signal, s.fold
),
signals AS (
    SELECT DISTINCT signal FROM flagged
    UNION
    SELECT '(any)'
)
SELECT g.signal, t.fold, t.tasks,
    coalesce(p.failed_flagged, 0) AS failed_flagged, t.failed,
    coalesce(p.succeeded_flagged, 0) AS succeeded_flagged, t.succeeded
FROM signals g CROSS JOIN totals t
LEFT JOIN per_fold p ON p.signal = g.signal AND p.fold = t.fold
ORDER BY g.signal, t.fold
