//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use tracelake::ingest::{Decoder, QuarantinedLine};
use tracelake::model::Event;
use tracelake::redact::Redactor;

/// Runs the tracelake binary.
pub fn tracelake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(args)
        .env_remove("TRACELAKE_LAKE")
        .env_remove("TRACELAKE_CONFIG")
        .output()
        .expect("running tracelake")
}

/// Runs the binary and requires success; returns stdout.
pub fn tracelake_ok(args: &[&str]) -> String {
    let out = tracelake(args);
    assert!(
        out.status.success(),
        "tracelake {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

pub fn decoder() -> Decoder {
    Decoder::new(Redactor::builtin())
}

/// Decodes one raw event given as JSON.
pub fn decode(raw: Value) -> Result<Event<'static>, QuarantinedLine> {
    decoder().decode(raw.to_string().as_bytes(), "test", 1, None).map(Event::into_owned)
}

pub fn event(raw: Value) -> Event<'static> {
    decode(raw).expect("a valid event")
}

/// The real traces in `tests/data/realworld/`.
pub fn realworld(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/realworld").join(name)
}

/// Every `*.parquet` data file below `dir`.
pub fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // Not the Delta logs' checkpoints.
                if !path.ends_with("_delta_log") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "parquet") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// All batches of one Parquet file, read with the plain Parquet reader.
/// The lake's state as its latest commit names it: the state file the `commitInfo` of the
/// newest version of the events table's Delta log points to; `None` before the first commit.
pub fn lake_state(lake: &Path) -> Option<Value> {
    let log = lake.join("events/_delta_log");
    let versions =
        std::fs::read_dir(&log).ok()?.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse::<u64>().ok());
    let latest = versions.max()?;
    let commit = std::fs::read_to_string(log.join(format!("{latest:020}.json"))).ok()?;
    let pointer = commit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|action| action.get("commitInfo")?.get("tracelake").cloned())?;
    // A later commit may have replaced it meanwhile: then there is no state to read here.
    serde_json::from_slice(&std::fs::read(lake.join(pointer["state"].as_str()?)).ok()?).ok()
}

pub fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(Result::unwrap).collect()
}

/// Every string value in every column of every Parquet file below `dir`.
pub fn all_strings(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for file in parquet_files(dir) {
        for batch in read_parquet(&file) {
            for column in batch.columns() {
                if matches!(column.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Dictionary(..)) {
                    let text = datafusion::arrow::compute::cast(column, &DataType::Utf8).expect("text columns cast to Utf8");
                    out.extend(text.as_string::<i32>().iter().flatten().map(str::to_owned));
                }
            }
        }
    }
    out
}

/// Total rows in the Parquet files below `dir`.
pub fn parquet_rows(dir: &Path) -> usize {
    parquet_files(dir).iter().flat_map(|f| read_parquet(f)).map(|b| b.num_rows()).sum()
}

/// The rows of a query over the lake at `lake`, as JSON objects.
pub fn sql_rows(lake: &str, query: &str) -> Vec<Value> {
    json_lines(&tracelake_ok(&["sql", "--lake", lake, "--format", "ndjson", query]))
}

/// The ids of the findings of an AnalysisReport (`analyze --format json`).
pub fn finding_ids(report: &str) -> std::collections::BTreeSet<String> {
    let report: Value = serde_json::from_str(report).unwrap();
    report["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_owned()).collect()
}

/// Lines of a JSON-lines output.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("json line")).collect()
}

/// A Python virtual environment with the pinned packages of `requirements` (a path in
/// the repository), made under the target directory on first use; its `python`.
pub fn python_venv(requirements: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join(requirements);
    let pinned = std::fs::read(&requirements).unwrap();
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("venv-{}", &hex::encode(Sha256::digest(&pinned))[..12]));
    if !venv.join("bin/python").exists() {
        // Made aside and moved into place, so that tests running at once never see half of it.
        let aside = venv.with_extension(format!("part{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&aside);
        let ok = |c: &mut Command| assert!(c.status().expect("python3 must be installed").success(), "{c:?} failed");
        ok(Command::new("python3").arg("-m").arg("venv").arg(&aside));
        ok(Command::new(aside.join("bin/python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements));
        if std::fs::rename(&aside, &venv).is_err() {
            let _ = std::fs::remove_dir_all(&aside);
        }
    }
    venv.join("bin/python")
}
