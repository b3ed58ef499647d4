//! Import and analyze over a generated lake (`tracelake generate`'s traces, every signal
//! injected), and one commit with and without the tables' Delta logs. `cargo bench
//! --bench pipeline`; the 1M and 10M runs and the DuckDB comparison are in `scripts/`
//! (BENCHMARKS.md).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use tracelake::config::Config;
use tracelake::generate::{GenerateOptions, generate};
use tracelake::ingest::Decoder;
use tracelake::lake::commit::{begin, commit};
use tracelake::lake::state::AnalysisRecord;
use tracelake::lake::state_log::{self, Base};
use tracelake::lake::{Lake, LakeError};
use tracelake::load::import::{ImportOptions, ImportSource, import_source};
use tracelake::pipeline::{AnalyzeOptions, analyze};
use tracelake::redact::Redactor;

const EVENTS: u64 = 50_000;

fn import_into(dir: &std::path::Path, input: &std::path::Path) -> Lake {
    let lake = Lake::new(dir.join("lake"));
    std::fs::create_dir_all(lake.root()).unwrap();
    let source = ImportSource::File(input.to_path_buf());
    import_source(&lake, &Decoder::new(Redactor::builtin()), &source, &ImportOptions::default(), &|_| {}).unwrap();
    lake
}

fn bench(c: &mut Criterion) {
    let data = tempfile::tempdir().unwrap();
    let input = data.path().join("events.jsonl");
    let mut lines = Vec::new();
    generate(&GenerateOptions { events: EVENTS, seed: 1 }, &mut lines).unwrap();
    std::fs::write(&input, lines).unwrap();

    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(EVENTS));
    group.sample_size(10);
    group.bench_function("import", |b| {
        b.iter_batched(|| tempfile::tempdir().unwrap(), |dir| import_into(dir.path(), &input), BatchSize::PerIteration);
    });
    let lake = import_into(data.path(), &input);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = Config::default();
    let full = AnalyzeOptions { full: true, ..AnalyzeOptions::default() };
    group.bench_function("analyze_full", |b| b.iter(|| runtime.block_on(analyze(&lake, &config, Redactor::builtin(), &full)).unwrap()));
    group.finish();
}

/// A commit of one new findings file, as `collect` and `export --every` make many: the
/// state alone (read it, write the events log's next version), and as `commit` does it,
/// with the Delta log of the table it changed brought in step.
fn commits(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::new(dir.path().join("lake"));
    begin(&lake).unwrap();
    let mut n = 0u64;
    let mut new_file = || {
        n += 1;
        let relative = format!("findings/date=2026-01-01/part-{n:016x}-00001.parquet");
        let path = lake.root().join(&relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"PAR1").unwrap();
        AnalysisRecord { run_id: n.to_string(), files: vec![relative], ..AnalysisRecord::default() }
    };
    let mut group = c.benchmark_group("commit");
    group.bench_function("state_only", |b| {
        b.iter(|| {
            let record = new_file();
            let read = state_log::load(&lake).unwrap();
            let mut state = read.clone();
            state.analyses.push(record);
            state.revision += 1;
            let change = state.change_from(&read);
            assert!(state_log::write(&lake, &read, &state, Base::State(&change)).unwrap());
        });
    });
    group.bench_function("state_and_delta_logs", |b| {
        b.iter(|| {
            let record = new_file();
            commit::<_, LakeError>(&lake, |m| {
                m.analyses.push(record.clone());
                Ok(())
            })
            .unwrap();
        });
    });
    group.finish();
}

criterion_group!(benches, bench, commits);
criterion_main!(benches);
