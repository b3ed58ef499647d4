//! Import and analyze over a generated lake (`tracelake generate`'s traces, every signal
//! injected). `cargo bench --bench pipeline`; the 1M and 10M runs and the DuckDB
//! comparison are in `scripts/` (BENCHMARKS.md).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use tracelake::config::Config;
use tracelake::generate::{GenerateOptions, generate};
use tracelake::ingest::Decoder;
use tracelake::lake::Lake;
use tracelake::lake::import::{ImportOptions, ImportSource, import_source};
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
        b.iter_batched(|| tempfile::tempdir().unwrap(), |dir| import_into(dir.path(), &input), BatchSize::PerIteration)
    });
    let lake = import_into(data.path(), &input);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = Config::default();
    let full = AnalyzeOptions { full: true, ..AnalyzeOptions::default() };
    group.bench_function("analyze_full", |b| b.iter(|| runtime.block_on(analyze(&lake, &config, Redactor::builtin(), &full)).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
