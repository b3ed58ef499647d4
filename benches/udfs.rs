//! tracelake's UDFs over arrays of real-looking rows, through DataFusion: the text
//! categories, the similarity and fingerprint functions, and the chain window function.
//! `cargo bench --bench udfs`

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use tracelake::redact::Redactor;
use tracelake::udfs::{Patterns, register_all};

const ROWS: usize = 100_000;

const MESSAGES: [&str; 8] = [
    "Nein, das ist falsch. Ich meinte den anderen Server.",
    "Done ✅ the deployment finished and the service is healthy.",
    "Could you check the disk usage on host-7 please?",
    "Thanks, that's all for now!",
    "I have cancelled your order #W2378156. However, I could not update the address.",
    "forget it, this is useless",
    "Yes, please go ahead and book the flight.",
    "Die Festplatte ist zu 45% belegt und der Dienst läuft.",
];

fn context() -> (tokio::runtime::Runtime, SessionContext) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let ctx = SessionContext::new();
    register_all(&ctx, Redactor::builtin(), Arc::new(Patterns::default_languages()));
    let text = |f: &dyn Fn(usize) -> String| Arc::new(StringArray::from((0..ROWS).map(f).collect::<Vec<_>>())) as ArrayRef;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..ROWS as i64)),
        text(&|i| format!("s{}", i / 40)),
        text(&|i| format!("{} ({i})", MESSAGES[i % MESSAGES.len()])),
        text(&|i| ["exec", "get_user_details", "cancel_pending_order", "think"][i % 4].to_owned()),
        text(&|i| format!(r#"{{"command": "df -h /var/lib/{}", "timeout": {}}}"#, i % 13, i % 7)),
        text(&|i| format!("ENOENT: no such file /tmp/build-{i}/out at 2026-11-24T10:{:02}:00Z", i % 60)),
    ];
    let schema = Arc::new(Schema::new(
        ["n", "session", "content", "tool_name", "tool_params", "error"]
            .iter()
            .enumerate()
            .map(|(i, name)| Field::new(*name, if i == 0 { DataType::Int64 } else { DataType::Utf8 }, false))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let batches: Vec<RecordBatch> = (0..ROWS).step_by(8192).map(|at| batch.slice(at, 8192.min(ROWS - at))).collect();
    ctx.register_table("rows", Arc::new(MemTable::try_new(schema, vec![batches]).unwrap())).unwrap();
    (runtime, ctx)
}

fn bench(c: &mut Criterion) {
    let (runtime, ctx) = context();
    let mut group = c.benchmark_group("udfs");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(20);
    let queries = [
        ("is_correction", "SELECT count(*) FILTER (WHERE is_correction(content)) FROM rows"),
        ("is_completion_claim", "SELECT count(*) FILTER (WHERE is_completion_claim(content)) FROM rows"),
        ("is_consequential_tool", "SELECT count(*) FILTER (WHERE is_consequential_tool(tool_name)) FROM rows"),
        ("redact", "SELECT sum(length(redact(content))) FROM rows"),
        ("param_similarity", r#"SELECT sum(param_similarity(tool_params, '{"command": "df -h /var/lib/3", "timeout": 2}')) FROM rows"#),
        ("fail_fingerprint", "SELECT count(DISTINCT fail_fingerprint(tool_name, tool_params, error)) FROM rows"),
        (
            "chain_position",
            "SELECT max(p['idx']) FROM (SELECT chain_position('a', session, 'msg.in', n * 1000, 1800000, 1000) \
             OVER (ORDER BY session, n) AS p FROM rows)",
        ),
    ];
    for (name, sql) in queries {
        group.bench_function(name, |b| b.iter(|| runtime.block_on(async { ctx.sql(sql).await.unwrap().collect().await.unwrap() })));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
