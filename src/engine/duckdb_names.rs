//! Functions DuckDB users reach for that DataFusion has under other names or forms: a
//! query that calls one is told what to write here, in terms of the lake's columns.

/// DuckDB's names of a function, and what to write here: one expression, or several for
/// its several uses (`epoch_ms` of a time and of a number).
const DUCKDB_FUNCTIONS: &[(&[&str], &[&str])] = &[
    (&["strftime"], &["to_char(ts, '%Y-%m-%d %H:%M')"]),
    (&["strptime"], &["to_timestamp('2026-01-02 03:04', '%Y-%m-%d %H:%M')"]),
    (&["epoch_ms"], &["CAST(ts AS BIGINT)", "to_timestamp_millis(1767225600000)"]),
    (&["epoch"], &["to_unixtime(ts)"]),
    (&["date_diff", "datediff"], &["date_part('epoch', max(ts) - min(ts))"]),
    (&["list"], &["array_agg(type ORDER BY ts)"]),
    (&["string_split", "str_split"], &["string_to_array(content, ' ')"]),
    (&["len"], &["character_length(content)", "cardinality(string_to_array(content, ' '))"]),
    (&["regexp_matches"], &["regexp_like(content, '[0-9]+')"]),
    (&["regexp_extract"], &["regexp_match(content, '([0-9]+)')[1]"]),
    (&["count_if"], &["count(*) FILTER (WHERE type = 'tool.call')"]),
    (&["arg_max", "max_by"], &["first_value(tool_name ORDER BY ts DESC)"]),
    (&["arg_min", "min_by"], &["first_value(tool_name ORDER BY ts)"]),
    (&["group_concat"], &["string_agg(type, ',')"]),
    (&["columns"], &["* EXCLUDE (content)", "tool_name, tool_params"]),
];

/// What to write here for DuckDB's function `name`, if it is one DataFusion lacks.
pub fn written_here(name: &str) -> Option<&'static [&'static str]> {
    let name = name.to_ascii_lowercase();
    DUCKDB_FUNCTIONS.iter().find(|(names, _)| names.contains(&name.as_str())).map(|(_, instead)| *instead)
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    #[tokio::test]
    async fn what_each_says_to_write_runs_where_its_name_does_not() {
        let ctx = SessionContext::new();
        let table = "CREATE TABLE events (ts TIMESTAMP, type VARCHAR, tool_name VARCHAR, tool_params VARCHAR, content VARCHAR) AS VALUES \
             (TIMESTAMP '2026-01-01 00:00:00', 'msg.in', NULL, NULL, 'order 42 please'), \
             (TIMESTAMP '2026-01-01 00:00:05', 'tool.call', 'cancel_order', '{}', NULL)";
        ctx.sql(table).await.unwrap().collect().await.unwrap();
        for (names, instead) in DUCKDB_FUNCTIONS {
            for example in *instead {
                let sql = format!("SELECT {example} FROM events");
                let rows = ctx.sql(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
                rows.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            for name in *names {
                assert!(ctx.sql(&format!("SELECT {name}(ts) FROM events")).await.is_err(), "{name} is no function of DataFusion's");
                assert_eq!(written_here(&name.to_uppercase()), Some(*instead));
            }
        }
        assert_eq!(written_here("to_char"), None);
    }
}
