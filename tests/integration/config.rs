//! The config file as users write it: mistakes are named, `tracelake config` shows what
//! is in effect and where it came from.

use serde_json::Value;

use crate::common::{realworld, tracelake, tracelake_ok};

fn config_file(dir: &std::path::Path, text: &str) -> String {
    let path = dir.join("cortex.json");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_mistake_in_the_config_is_one_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, said) in [
        (
            r#"{"traceAnalyzer": {"output": {"maxFinding": 10}}}"#,
            "`traceAnalyzer.output.maxFinding` is not a setting; did you mean `traceAnalyzer.output.maxFindings`?",
        ),
        (
            r#"{"traceAnalyzer": {"output": {"maxFindings": "1000"}}}"#,
            "`traceAnalyzer.output.maxFindings`: invalid type: string \"1000\", expected i64",
        ),
        (
            r#"{"traceAnalyzer": {"signals": {"SIG-CORECTION": {"enabled": false}}}}"#,
            "did you mean `traceAnalyzer.signals.SIG-CORRECTION`?",
        ),
        (r#"{"traceAnalyser": {"enabled": true}}"#, "`traceAnalyser` is not a setting; did you mean `traceAnalyzer`?"),
        (r#"{"traceAnalyzer": {"maxEventsPerRun": 10}}"#, "`traceAnalyzer.maxEventsPerRun` has no effect in tracelake"),
    ] {
        let config = config_file(dir.path(), text);
        let out = tracelake(&["config", "--config", &config]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {stderr}");
        assert_eq!(stderr.matches(said).count(), 1, "{text}: {stderr}");
        assert!(stderr.contains(&config), "names the file: {stderr}");
    }
}

#[test]
fn config_prints_each_setting_and_where_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        r#"{"memory": {"plugin": "other"}, "llm": {"endpoint": "http://127.0.0.1:9/v1", "apiKey": "sk-top-secret-123", "provider": "x"},
            "traceAnalyzer": {"output": {"maxFindings": 40}, "signals": {"SIG-DOOM-LOOP": {"severity": "low"}},
                "storage": {"options": {"aws_endpoint": "http://127.0.0.1:9000", "aws_secret_access_key": "s3-top-secret"}},
                "workers": ["127.0.0.1:50051"]}, "patterns": {"language": "fr"}}"#,
    );
    let text = tracelake_ok(&["config", "--config", &config]);
    let line =
        |key: &str| text.lines().find(|l| l.split_whitespace().next() == Some(key)).unwrap_or_else(|| panic!("{key}: {text}")).to_owned();
    assert!(line("traceAnalyzer.output.maxFindings").contains(" 40 ") && line("traceAnalyzer.output.maxFindings").ends_with(&config));
    assert!(line("traceAnalyzer.chainGapMinutes").contains(" 30 ") && line("traceAnalyzer.chainGapMinutes").ends_with("default"));
    assert!(line("traceAnalyzer.signals.SIG-DOOM-LOOP.severity").contains("\"low\""));
    // A default that applies shows as its value, not as null.
    let tool_fail = tracelake::detect::signals::signal("SIG-TOOL-FAIL").unwrap().severity.as_str();
    let severity = line("traceAnalyzer.signals.SIG-TOOL-FAIL.severity");
    assert!(severity.contains(&format!("\"{tool_fail}\"")) && severity.ends_with("default"), "{severity}");
    assert!(line("traceAnalyzer.llm.timeoutMs").contains(" 30000 "), "{text}");
    assert!(line("traceAnalyzer.llm.endpoint").ends_with(&config), "from the top-level llm: {text}");
    assert!(line("patterns.language").contains("[\"fr\"]"));
    assert!(!text.contains("sk-top-secret-123") && line("traceAnalyzer.llm.apiKey").contains("(set)"), "{text}");
    assert!(!text.contains("s3-top-secret") && line("traceAnalyzer.storage.options.aws_secret_access_key").contains("(set)"), "{text}");
    assert!(line("traceAnalyzer.storage.options.aws_endpoint").contains("http://127.0.0.1:9000"), "{text}");
    assert!(line("traceAnalyzer.workers").contains("127.0.0.1:50051") && line("traceAnalyzer.workerScanBytes").ends_with("default"));

    let json: Vec<Value> = serde_json::from_str(&tracelake_ok(&["config", "--config", &config, "--json"])).unwrap();
    let max = json.iter().find(|s| s["key"] == "traceAnalyzer.output.maxFindings").unwrap();
    assert_eq!((max["value"].as_i64(), max["from"].as_str()), (Some(40), Some(config.as_str())));

    let defaults = tracelake_ok(&["config"]);
    assert!(defaults.contains("config file: none") && !defaults.contains(&config));
}

#[test]
fn report_path_receives_each_analysis_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("last-report.json");
    let config = config_file(dir.path(), &format!(r#"{{"traceAnalyzer": {{"output": {{"reportPath": "{}"}}}}}}"#, report.display()));
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake, "--config", &config]);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(written["stats"]["findingsDetected"].as_u64().unwrap() > 0, "{written}");
}
