//! `tracelake factors` on traffic with a planted factor: sessions that call one tool fail
//! at three times the base rate, everything else is random.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::common::{tracelake, tracelake_ok};

/// How the outcomes are known.
#[derive(Clone, Copy, PartialEq)]
enum Told {
    /// An outcomes file, imported.
    ByFile,
    /// Only by what the user says after the agent's answer.
    InWords,
}

/// 400 sessions; `planted` and `null_tool` are each called in about 30 % of them, at
/// random; a session that calls `planted` fails with probability 0.45, any other with 0.15.
fn planted_lake(dir: &std::path::Path, told: Told) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let sessions = (0..400)
        .map(|_| {
            let tools: Vec<&str> = ["planted", "null_tool", "lookup"]
                .into_iter()
                .filter(|&t| rng.random_bool(if t == "lookup" { 0.5 } else { 0.3 }))
                .collect();
            let failed = rng.random_bool(if tools.contains(&"planted") { 0.45 } else { 0.15 });
            (tools, failed)
        })
        .collect::<Vec<_>>();
    lake_of_sessions(dir, &sessions, told)
}

/// A lake of one session per `(tools it calls, whether it failed)`, named `s0`, `s1`, …
fn lake_of_sessions(dir: &std::path::Path, sessions: &[(Vec<&str>, bool)], told: Told) -> String {
    let (mut events, mut outcomes) = (Vec::new(), Vec::new());
    for (s, (tools, failed)) in sessions.iter().enumerate() {
        let session = format!("s{s}");
        let ts = 1_767_225_600_000_i64 + s as i64 * 60_000;
        let mut push = |n: i64, kind: &str, payload: Value| {
            events.push(json!({"id": format!("{session}-{n}"), "ts": ts + n * 1000, "agent": "support", "session": session, "type": kind, "payload": payload}).to_string());
        };
        push(0, "msg.in", json!({"content": "Help me, please."}));
        let mut n = 1;
        for tool in tools {
            push(n, "tool.call", json!({"toolName": tool, "params": {"n": n}}));
            push(n + 1, "tool.result", json!({"toolName": tool, "result": {"ok": true}}));
            n += 2;
        }
        push(n, "msg.out", json!({"content": "Here you are."}));
        if told == Told::InWords {
            push(n + 1, "msg.in", json!({"content": if *failed { "That's wrong, not what I asked." } else { "Thanks, that's all!" }}));
        }
        outcomes.push(json!({"session": session, "outcome": if *failed { "failure" } else { "success" }}).to_string());
    }
    let (events_file, outcomes_file) = (dir.join("events.jsonl"), dir.join("outcomes.jsonl"));
    std::fs::write(&events_file, events.join("\n") + "\n").unwrap();
    std::fs::write(&outcomes_file, outcomes.join("\n") + "\n").unwrap();
    let lake = dir.join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, events_file.to_str().unwrap()]);
    if told == Told::ByFile {
        tracelake_ok(&["outcomes", "import", "--lake", &lake, outcomes_file.to_str().unwrap()]);
    }
    lake
}

/// A planted lake (outcomes imported) and a directory of factor files, each `(name, query)`.
fn lake_with_factor_files(files: &[(&str, &str)]) -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let factors = dir.path().join("factors");
    std::fs::create_dir(&factors).unwrap();
    for (name, query) in files {
        std::fs::write(factors.join(format!("{name}.sql")), query).unwrap();
    }
    let factors = factors.display().to_string();
    (dir, lake, factors)
}

fn factor<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["factors"].as_array().unwrap().iter().find(|f| f["factor"] == name).unwrap_or_else(|| panic!("{name}: {report:#}"))
}

#[test]
fn a_planted_factor_ranks_first_and_a_null_one_is_not_significant() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let report: Value = serde_json::from_str(&tracelake_ok(&["factors", "--lake", &lake, "--format", "json"])).unwrap();
    let first = &report["factors"][0];
    assert_eq!((first["factor"].as_str(), first["value"].as_str()), (Some("tool:planted"), Some("used")), "{report:#}");
    assert!(first["qValue"].as_f64().unwrap() < 0.01 && first["lift"].as_f64().unwrap() > 2.0, "{first}");
    let (planted, null) = (first["sessions"].as_u64().unwrap(), factor(&report, "tool:null_tool"));
    assert!(null["sessions"].as_u64().unwrap().abs_diff(planted) < 40, "the same support: {null}");
    assert!(null["qValue"].as_f64().unwrap() > 0.05, "a null factor is not significant: {null}");
    let (low, high, rate) = (first["ciLow"].as_f64().unwrap(), first["ciHigh"].as_f64().unwrap(), first["failureRate"].as_f64().unwrap());
    assert!(low < rate && rate < high && (0.3..0.6).contains(&rate), "{first}");

    let table = tracelake_ok(&["factors", "--lake", &lake]);
    assert!(table.lines().nth(3).is_some_and(|l| l.starts_with("tool:planted = used")), "{table}");
    let standing_out = report["factors"].as_array().unwrap().iter().filter(|f| f["qValue"].as_f64().unwrap() < 0.05).count();
    let said = match standing_out {
        1 => "One of them stands out at a false discovery rate of 5 % (q under 0.05).".to_owned(),
        n => format!("{n} of them stand out at a false discovery rate of 5 % (q under 0.05)."),
    };
    assert!(standing_out >= 1 && table.contains(&said), "{table}");
    let csv = tracelake_ok(&["factors", "--lake", &lake, "--format", "csv"]);
    assert!(csv.starts_with("factor,value,sessions,failed,failure_rate,ci_low,ci_high,lift,p_value,q_value\ntool:planted,used,"), "{csv}");
}

/// The risk model learns the planted tool: on held-out tasks it ranks failures above
/// successes better than chance, and its riskiest unflagged sessions called the tool.
#[test]
fn the_risk_model_ranks_held_out_failures_and_names_unflagged_risky_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let report: Value = serde_json::from_str(&tracelake_ok(&["risk", "--lake", &lake, "--format", "json", "--top", "5"])).unwrap();
    let auc = report["crossValidatedAuc"].as_f64().unwrap();
    assert!(auc > 0.6 && auc <= 1.0, "{report:#}");
    assert_eq!((report["sessionsScored"].as_u64(), report["folds"].as_u64()), (Some(400), Some(5)));
    let riskiest = report["riskiestWithoutFinding"].as_array().unwrap();
    assert_eq!(riskiest.len(), 5);
    let called: Vec<Value> = crate::common::sql_rows(&lake, "SELECT DISTINCT session FROM events WHERE tool_name = 'planted'");
    for s in riskiest {
        assert!(called.contains(&json!({"session": s["session"]})), "{s} did not call the planted tool");
    }
    let table = tracelake_ok(&["risk", "--lake", &lake]);
    assert!(table.contains("cross-validated AUC over 5 folds by task: 0."), "{table}");
}

/// Where nothing but chance tells the failed sessions apart, the table says so.
#[test]
fn a_table_of_values_none_of_which_stands_out_says_so() {
    let coin = "SELECT DISTINCT session, 'even' AS factor, 'yes' AS value FROM events WHERE CAST(substr(session, 2) AS INT) % 2 = 0";
    let (_dir, lake, factors) = lake_with_factor_files(&[("coin", coin)]);
    // The planted tool is called in fewer than 130 sessions, so it is not tested.
    let args = ["factors", "--lake", &lake, "--factors", &factors, "--min-support", "130"];
    let table = tracelake_ok(&args);
    let lines: Vec<&str> = table.lines().filter(|l| l.contains(" = ")).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| !l.starts_with("tool:planted")), "{table}");
    assert!(table.contains("None of them stands out at a false discovery rate of 5 % (every q is 0.05 or more): with "), "{table}");
}

/// The same traffic with its outcomes only in the users' last words.
#[test]
fn a_planted_factor_ranks_first_on_inferred_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::InWords);
    let without = tracelake(&["factors", "--lake", &lake]);
    assert!(String::from_utf8_lossy(&without.stderr).contains("the lake has no outcomes"), "imported ones only by default");
    let report: Value =
        serde_json::from_str(&tracelake_ok(&["factors", "--lake", &lake, "--outcomes", "inferred", "--format", "json"])).unwrap();
    assert_eq!(report["sessionsScored"], 400, "every session's outcome is read from its words");
    let first = &report["factors"][0];
    assert_eq!((first["factor"].as_str(), first["value"].as_str()), (Some("tool:planted"), Some("used")), "{report:#}");
    assert!(first["qValue"].as_f64().unwrap() < 0.01, "{first}");
    assert!(factor(&report, "tool:null_tool")["qValue"].as_f64().unwrap() > 0.05);
    let scores = tracelake_ok(&["score", "--lake", &lake, "--outcomes", "inferred"]);
    assert!(scores.starts_with("400 sessions with a known outcome"), "{scores}");
    // The report says the outcomes it scored are inferred, not known.
    tracelake_ok(&["analyze", "--lake", &lake]);
    let markdown = tracelake_ok(&["report", "--lake", &lake, "--format", "markdown"]);
    assert!(markdown.contains("400 sessions with an outcome inferred from their users' words (none was imported), "), "{markdown}");
    assert!(!markdown.contains("known outcome"), "{markdown}");
}

#[test]
fn factor_files_add_factors_and_a_broken_one_is_named() {
    let planted = "SELECT DISTINCT session, 'calls_planted' AS factor, 'yes' AS value FROM events WHERE tool_name = 'planted';\n";
    let (_dir, lake, factors) = lake_with_factor_files(&[("planted", planted)]);
    let dir_arg = factors.as_str();
    let report: Value =
        serde_json::from_str(&tracelake_ok(&["factors", "--lake", &lake, "--factors", dir_arg, "--format", "json"])).unwrap();
    let (copy, planted) = (factor(&report, "calls_planted"), factor(&report, "tool:planted"));
    assert_eq!((&copy["sessions"], &copy["pValue"]), (&planted["sessions"], &planted["pValue"]), "the same sessions score the same");
    let listed = tracelake_ok(&["factors", "--lake", &lake, "--factors", dir_arg, "--list"]);
    assert!(listed.contains("calls_planted") && listed.contains("tool:null_tool") && listed.contains("user_turns"), "{listed}");

    std::fs::write(std::path::Path::new(dir_arg).join("broken.sql"), "SELECT session FROM events").unwrap();
    let out = tracelake(&["factors", "--lake", &lake, "--factors", dir_arg]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(said.contains("broken.sql: a factor file is one query returning session, factor and value"), "{said}");
}

/// A value held by all but a few sessions rests on those few as much as a value held by a
/// few rests on its holders: both need `--min-support` sessions.
#[test]
fn a_value_lacked_by_fewer_sessions_than_the_support_is_not_tested() {
    let all_but = |name: &str, lacking: &str| {
        format!("SELECT DISTINCT session, '{name}' AS factor, 'yes' AS value FROM events WHERE session NOT IN ({lacking})")
    };
    let (four, five) = (all_but("all_but_four", "'s0', 's1', 's2', 's3'"), all_but("all_but_five", "'s0', 's1', 's2', 's3', 's4'"));
    let (_dir, lake, factors) = lake_with_factor_files(&[("all_but_four", &four), ("all_but_five", &five)]);
    let args = ["factors", "--lake", &lake, "--factors", &factors, "--min-support", "5", "--format", "json"];
    let report: Value = serde_json::from_str(&tracelake_ok(&args)).unwrap();
    assert_eq!(factor(&report, "all_but_five")["sessions"], 395);
    let tested: Vec<&str> = report["factors"].as_array().unwrap().iter().filter_map(|f| f["factor"].as_str()).collect();
    assert!(!tested.contains(&"all_but_four"), "{tested:?}");
    let risk: Value = serde_json::from_str(&tracelake_ok(&["risk", "--lake", &lake, "--format", "json"])).unwrap();
    let with_files = ["risk", "--lake", &lake, "--factors", &factors, "--format", "json"];
    let risk_with_files: Value = serde_json::from_str(&tracelake_ok(&with_files)).unwrap();
    assert_eq!(risk_with_files["features"].as_u64(), risk["features"].as_u64().map(|n| n + 1), "only all_but_five is weighed");
}

#[test]
fn factors_without_outcomes_say_how_to_load_them() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, crate::common::realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let out = tracelake(&["factors", "--lake", &lake]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&format!("`tracelake outcomes import --lake {lake} FILE`")), "{said}");
}

/// `risk` writes every session's risk into `session_risk`; the next fit replaces it.
#[test]
fn risk_writes_each_sessions_risk_into_the_lake_and_a_new_fit_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let report: Value = serde_json::from_str(&tracelake_ok(&["risk", "--lake", &lake, "--format", "json", "--top", "3"])).unwrap();
    let stored = "SELECT count(*) AS n, count(DISTINCT session) AS sessions, min(risk) >= 0 AND max(risk) <= 1 AS bounded, \
                  count(*) FILTER (WHERE failed) AS failed, min(outcomes) AS outcomes FROM session_risk";
    let failed = crate::common::sql_rows(&lake, "SELECT count(*) AS n FROM outcomes WHERE outcome = 'failure'")[0]["n"].clone();
    let expected = json!({"n": 400, "sessions": 400, "bounded": true, "failed": failed, "outcomes": "imported"});
    assert_eq!(crate::common::sql_rows(&lake, stored), vec![expected.clone()]);
    let riskiest: Vec<Value> =
        crate::common::sql_rows(&lake, "SELECT session FROM session_risk WHERE NOT flagged ORDER BY risk DESC, session LIMIT 3");
    let shown: Vec<Value> = report["riskiestWithoutFinding"].as_array().unwrap().iter().map(|s| json!({"session": s["session"]})).collect();
    assert_eq!(riskiest, shown, "the table holds what risk showed");

    tracelake_ok(&["risk", "--lake", &lake]);
    assert_eq!(crate::common::sql_rows(&lake, stored), vec![expected], "a second fit replaces the first");
    tracelake_ok(&["vacuum", "--lake", &lake, "--retain", "0s"]);
    let files = crate::common::parquet_files(&std::path::Path::new(&lake).join("session_risk"));
    assert_eq!(files.len(), 1, "the first fit's file is vacuumed: {files:?}");
}

/// The model weighs the factors of the user's factor files too.
#[test]
fn risk_weighs_the_factors_of_factor_files() {
    let long = "SELECT session, 'long_session' AS factor, 'yes' AS value FROM events GROUP BY session HAVING count(*) > 4";
    let (_dir, lake, factors) = lake_with_factor_files(&[("long", long)]);
    let features = |extra: &[&str]| -> u64 {
        let args = [&["risk", "--lake", &lake, "--format", "json"], extra].concat();
        serde_json::from_str::<Value>(&tracelake_ok(&args)).unwrap()["features"].as_u64().unwrap()
    };
    assert_eq!(features(&["--factors", &factors]), features(&[]) + 1);
}

/// The size buckets' edges come from the config's `factors`; edges out of order are refused.
#[test]
fn size_buckets_follow_the_configured_edges() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let buckets = |config: Option<&str>| -> Vec<Value> {
        let query = "SELECT value, count(*) AS n FROM session_factors WHERE factor = 'user_turns' GROUP BY value";
        let mut args = vec!["sql", "--lake", &lake, "--format", "ndjson"];
        if let Some(config) = config {
            args.extend(["--config", config]);
        }
        args.push(query);
        crate::common::json_lines(&tracelake_ok(&args))
    };
    assert_eq!(buckets(None), vec![json!({"value": "small", "n": 400})], "one user turn is small by default");
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"traceAnalyzer": {"factors": {"userTurns": [0, 1]}}}"#).unwrap();
    assert_eq!(buckets(config.to_str()), vec![json!({"value": "medium", "n": 400})]);

    std::fs::write(&config, r#"{"traceAnalyzer": {"factors": {"userTurns": [3, 1]}}}"#).unwrap();
    let out = tracelake(&["factors", "--lake", &lake, "--config", config.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("`traceAnalyzer.factors.userTurns`: the edges [small, medium] must be two numbers, 0 ≤ small < medium; got [3, 1]"),
        "{said}"
    );
}

/// The HTML report of `lake`, analysed, as Chromium renders it (no console output).
fn rendered_report(dir: &std::path::Path, lake: &str) -> String {
    tracelake_ok(&["analyze", "--lake", lake]);
    let page = dir.join("report.html");
    tracelake_ok(&["report", "--lake", lake, "--output", page.to_str().unwrap()]);
    let (dom, console) = crate::report::chromium_render(&page);
    assert!(console.is_empty(), "console output: {console:#?}");
    dom
}

/// The report's factors section: the planted value first in the table and the forest plot
/// (drawn in Chromium), the riskiest unflagged sessions linked to their transcripts; the
/// same in Markdown and JSON; no session id once anonymized.
#[test]
fn the_report_shows_what_goes_with_failure_and_the_riskiest_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let dom = rendered_report(dir.path(), &lake);
    let section = &dom[dom.find("id=\"factors\"").expect("a factors section")..];
    let plot = &section[section.find("id=\"chart-factors\"").unwrap()..section.find("</figure>").unwrap()];
    assert!(plot.contains("data-rendered=\"true\"") && plot.matches("class=\"dot\"").count() >= 2, "{plot}");
    assert!(plot.contains("tool:planted = used"), "{plot}");
    assert!(section.contains("<td>tool:planted = used</td>"), "the table");
    let link = section.find("href=\"#session-").expect("a riskiest session linked");
    let id = &section[link + 7..link + 7 + section[link + 7..].find('"').unwrap()];
    assert!(dom.contains(&format!("<details id=\"{id}\" class=\"transcript\">")), "transcript {id} missing");

    let markdown = tracelake_ok(&["report", "--lake", &lake, "--format", "markdown"]);
    assert!(markdown.contains("## What goes with failure") && markdown.contains("| tool:planted = used |"), "{markdown}");
    assert!(markdown.contains("400 sessions with an imported outcome, ") && markdown.contains("| outcome (imported) |"), "{markdown}");
    let json: Value = serde_json::from_str(&tracelake_ok(&["report", "--lake", &lake, "--format", "json"])).unwrap();
    let factors = &json["factors"];
    assert_eq!((factors["outcomes"].as_str(), factors["sessionsScored"].as_u64()), (Some("imported"), Some(400)));
    assert_eq!(factors["factors"][0]["factor"], "tool:planted");
    let riskiest = factors["risk"]["riskiestWithoutFinding"].as_array().unwrap();
    assert!(!riskiest.is_empty() && factors["risk"]["crossValidatedAuc"].as_f64().is_some(), "{factors:#}");

    let anonymous = tracelake_ok(&["report", "--lake", &lake, "--format", "html", "--anonymize"]);
    for s in riskiest {
        let session = s["session"].as_str().unwrap();
        assert!(!anonymous.contains(&format!(">{session}<")) && !anonymous.contains(&format!("session-{session}\"")), "{session} left");
    }
    assert!(anonymous.contains("href=\"#session-session-1\""), "placeholders link to placeholder transcripts");
}

/// Lifts with no place on a log scale are drawn at the plot's edges, not left out: a value
/// every failed session holds (no other session failed: unbounded) and one no failed
/// session holds (lift 0).
#[test]
fn the_forest_plot_draws_unbounded_and_zero_lifts_at_its_edges() {
    let dir = tempfile::tempdir().unwrap();
    let sessions: Vec<(Vec<&str>, bool)> = (0..60)
        .map(|s| match s % 6 {
            0 | 1 => (vec!["escalate", "lookup"], true),
            2 => (vec!["escalate"], false),
            3 | 4 => (vec!["refund", "lookup"], false),
            _ => (vec!["lookup"], false),
        })
        .collect();
    let lake = lake_of_sessions(dir.path(), &sessions, Told::ByFile);
    let dom = rendered_report(dir.path(), &lake);
    let section = &dom[dom.find("id=\"factors\"").expect("a factors section")..];
    let plot = &section[section.find("id=\"chart-factors\"").unwrap()..section.find("</figure>").unwrap()];
    let table = &section[section.find("<table class=\"factors\"").unwrap()..];
    let rows = table[..table.find("</table>").unwrap()].matches("<tr><td>").count();
    assert!(rows >= 2, "{table}");
    assert_eq!(plot.matches("class=\"dot").count(), rows, "one mark per row of the table: {plot}");
    assert!(table.contains("<td>tool:escalate = used</td>") && table.contains("<td>tool:refund = used</td>"), "{table}");
    assert_eq!(plot.matches("class=\"dot unbounded\"").count(), table.matches("<td>∞</td>").count(), "{plot}");
    assert!(plot.contains("tool:escalate = used: lift unbounded (no other session failed), failure rate 66.7 %, 30 sessions"), "{plot}");
    assert_eq!(plot.matches("class=\"dot none-failed\"").count(), table.matches("<td>0.00</td>").count(), "{plot}");
    assert!(plot.contains("tool:refund = used: lift 0.00 (0.00–"), "{plot}");
    assert!(!plot.contains(">1/1024<"), "the axis reaches no lower than its lifts and intervals above 0: {plot}");
    assert!(plot.contains("▶ at the right edge: no other session failed (lift unbounded)"), "the legend: {plot}");
    assert!(plot.contains("○ at the left edge: no session with the value failed (lift 0)"), "the legend: {plot}");
}

/// The factors section gives way only to the memory pool: a damaged outcomes file still
/// fails the report with the lake's one line that names it.
#[test]
fn a_damaged_outcomes_file_fails_the_report_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    tracelake_ok(&["analyze", "--lake", &lake]);
    let whole = tracelake_ok(&["report", "--lake", &lake, "--format", "markdown"]);
    assert!(whole.contains("## What goes with failure"), "{whole}");
    for file in crate::common::parquet_files(&std::path::Path::new(&lake).join("outcomes")) {
        std::fs::write(file, b"damaged").unwrap();
    }
    let out = tracelake(&["report", "--lake", &lake, "--format", "markdown"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("file(s) of the lake do not read as Parquet: outcomes/") && stderr.contains("tracelake repair"), "{stderr}");
}
