-- Rule effectiveness (R-040–R-042). A generated rule (any output: SOUL.md rule, policy,
-- pattern) is tracked from the run that first produced it. Its failures are the findings
-- of its signal among its agents: "before" in that run, "after" the average per later
-- run. With fewer than two later runs the rule is pending; then a drop of 50 % or more
-- is effective, of 20 % or more marginal, anything less ineffective.
CREATE OR REPLACE VIEW rule_effectiveness AS
WITH first_seen AS (
    SELECT o.output_id, min(r.run_no) AS created_run
    FROM outputs o JOIN runs r ON r.run_id = o.run_id
    GROUP BY o.output_id
),
rules AS (
    SELECT o.output_id, o.type, o.signal, o.agents, o.content, f.created_run, r.run_id AS created_run_id
    FROM first_seen f
    JOIN runs r ON r.run_no = f.created_run
    JOIN outputs o ON o.output_id = f.output_id AND o.run_id = r.run_id
),
failures_per_run AS (
    SELECT rl.output_id, rl.created_run, r.run_no,
           count(fi.finding_id) AS failures
    FROM rules rl
    JOIN runs r ON r.run_no >= rl.created_run
    LEFT JOIN findings fi
        ON fi.run_id = r.run_id AND fi.signal = rl.signal
       AND array_has(string_to_array(rl.agents, ','), fi.agent)
    GROUP BY rl.output_id, rl.created_run, r.run_no
),
totals AS (
    SELECT output_id,
           sum(CASE WHEN run_no = created_run THEN failures ELSE 0 END) AS failures_before,
           avg(CASE WHEN run_no > created_run THEN CAST(failures AS DOUBLE) END) AS failures_after,
           sum(CASE WHEN run_no > created_run THEN 1 ELSE 0 END) AS runs_after
    FROM failures_per_run
    GROUP BY output_id
),
scored AS (
    SELECT rl.output_id AS rule_id, rl.type, rl.signal, rl.agents, rl.content, rl.created_run_id,
           t.failures_before, coalesce(t.failures_after, 0.0) AS failures_after, t.runs_after,
           CASE WHEN t.failures_before > 0 AND t.runs_after > 0
                THEN round((t.failures_before - t.failures_after) * 100.0 / t.failures_before, 1) END AS effectiveness
    FROM rules rl JOIN totals t ON t.output_id = rl.output_id
)
SELECT *,
       CASE WHEN runs_after < 2 OR effectiveness IS NULL THEN 'pending'
            WHEN effectiveness >= 50 THEN 'effective'
            WHEN effectiveness >= 20 THEN 'marginal'
            ELSE 'ineffective' END AS status
FROM scored;
