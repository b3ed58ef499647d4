-- The outcome of each session: the latest imported (`tracelake outcomes import`), and
-- with `--outcomes inferred` also those inferred from the users' words
-- (`inferred_outcomes.sql`) where none was imported.

-- The latest outcome imported for each session.
CREATE OR REPLACE VIEW imported_outcomes AS
SELECT session, outcome, score, source, imported_at
FROM (
    SELECT *, row_number() OVER (PARTITION BY session ORDER BY imported_at DESC, source DESC) AS nth
    FROM outcomes
)
WHERE nth = 1;

-- The outcomes scored: the imported ones (`score` and `factors` redefine it for
-- `--outcomes inferred`).
CREATE OR REPLACE VIEW session_outcomes AS SELECT * FROM imported_outcomes;
