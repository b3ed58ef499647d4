-- Known session outcomes (`session_outcomes`) against the findings: which signals
-- separate the sessions that failed from those that went well (`tracelake score`).

-- The sessions scored: those with an outcome and events in the lake.
CREATE OR REPLACE VIEW scored_sessions AS
SELECT session, outcome = 'failure' AS failed
FROM session_outcomes
WHERE session IN (SELECT session FROM events);

-- Per signal, and for all signals together (`(any)`), among the sessions with a known
-- outcome and events in the lake: how many failed and how many successful ones have a
-- finding of it, the share of each (`failed_rate`, `succeeded_rate`), their ratio
-- (`lift`: how much likelier a flagged session is one that failed), and its findings per
-- scored session. A signal that fires only outside the scored sessions has a row of zeros.
CREATE OR REPLACE VIEW signal_scores AS
WITH scored AS (SELECT session, failed FROM scored_sessions),
totals AS (
    SELECT count(*) FILTER (WHERE failed) AS failed, count(*) FILTER (WHERE NOT failed) AS succeeded FROM scored
),
flagged AS (
    SELECT signal, session, count(*) AS findings FROM findings GROUP BY signal, session
    UNION ALL
    SELECT '(any)' AS signal, session, count(*) AS findings FROM findings GROUP BY session
),
per_signal AS (
    SELECT f.signal,
        count(s.session) FILTER (WHERE s.failed) AS failed_flagged,
        count(s.session) FILTER (WHERE NOT s.failed) AS succeeded_flagged,
        coalesce(sum(f.findings) FILTER (WHERE s.session IS NOT NULL), 0) AS findings
    FROM flagged f LEFT JOIN scored s ON s.session = f.session
    GROUP BY f.signal
),
signals AS (
    SELECT * FROM per_signal
    UNION ALL
    SELECT '(any)', 0, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM findings)
),
rates AS (
    SELECT p.signal, p.failed_flagged, t.failed, p.succeeded_flagged, t.succeeded, p.findings,
        CAST(p.failed_flagged AS DOUBLE) / nullif(t.failed, 0) AS failed_rate,
        CAST(p.succeeded_flagged AS DOUBLE) / nullif(t.succeeded, 0) AS succeeded_rate,
        CAST(p.findings AS DOUBLE) / nullif(t.failed + t.succeeded, 0) AS findings_per_session
    FROM signals p CROSS JOIN totals t
)
SELECT signal, failed_flagged, failed, failed_rate, succeeded_flagged, succeeded, succeeded_rate,
    failed_rate / nullif(succeeded_rate, 0) AS lift, findings, findings_per_session
FROM rates;
