//! The command line: argument parsing and one module per command.

mod analyze;
mod brief;
mod collect;
mod compact;
mod config;
mod demo;
mod export;
mod factors;
mod functions;
mod generate;
mod import;
mod interrupt;
mod listen_addr;
mod outcomes;
mod progress;
mod repair;
mod repl;
mod report;
mod risk;
mod score;
mod sql;
mod status;
mod time_args;
mod upgrade;
mod vacuum;
mod watch;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tracelake::config::Config;
use tracelake::engine::distributed::WorkerUnreachable;
use tracelake::engine::{EngineOptions, pool_exhausted};
use tracelake::ingest::Decoder;
use tracelake::lake::Lake;
use tracelake::lake::repair::{unreadable_committed, why_unreadable};
use tracelake::privacy::{Pii, PiiAction};
use tracelake::redact::Redactor;
use tracelake::report::text::{shell_word, with_lake};

/// Find out why AI agents fail: analyze OpenClaw agent traces with SQL.
#[derive(Debug, Parser)]
#[command(name = "tracelake", version, about)]
pub struct Cli {
    /// Lake: a directory, or a prefix on object storage (s3://BUCKET/PREFIX, gs://…, az://…).
    #[arg(long, global = true, env = "TRACELAKE_LAKE")]
    lake: Option<PathBuf>,
    /// OpenClaw cortex plugin config file (or its `traceAnalyzer` object alone).
    #[arg(long, global = true, env = "TRACELAKE_CONFIG")]
    config: Option<PathBuf>,
    /// `tracelake worker`s that run the queries of sql, analyze and report:
    /// HOST:PORT,HOST:PORT,… (default: traceAnalyzer.workers; none: this process).
    #[arg(long, global = true, env = "TRACELAKE_WORKERS", value_delimiter = ',')]
    workers: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the pipeline on the bundled sample data and print what it finds.
    Demo(demo::DemoArgs),
    /// Import raw events from JSONL files (either schema, one JSON object a line).
    Import(import::ImportArgs),
    /// Export the JetStream event stream into the lake (new events only, exactly once).
    Export(export::ExportArgs),
    /// Receive OpenTelemetry traces over OTLP/HTTP into the lake.
    Collect(collect::CollectArgs),
    /// Detect failure patterns (new events only, unless --full) and report them.
    Analyze(analyze::AnalyzeArgs),
    /// Load the known outcome of sessions (success or failure) for `score`.
    Outcomes(outcomes::OutcomesArgs),
    /// Show which signals separate failed sessions from successful ones (needs outcomes).
    Score(score::ScoreArgs),
    /// Show which conditions (agent, model, tools, size, errors, time …) go with failure (needs outcomes).
    Factors(factors::FactorsArgs),
    /// Score each session's risk of failure from its factors and signals (needs outcomes).
    Risk(risk::RiskArgs),
    /// Write the boot context an agent loads when it starts: threads, decisions, mood, rules.
    Brief(brief::BriefArgs),
    /// Write a report of the lake's findings (HTML with charts, Markdown or JSON).
    Report(report::ReportArgs),
    /// Run SQL over the lake, and over files named by path (no query: an interactive prompt).
    Sql(sql::SqlArgs),
    /// List the SQL functions tracelake adds (text categories, similarity, chain windows …).
    Functions(functions::FunctionsArgs),
    /// Alert on critical findings as events arrive (POST to a webhook).
    Watch(watch::WatchArgs),
    /// Show what the lake holds.
    Status(status::StatusArgs),
    /// Show the effective settings and where each came from (the config file or the default).
    Config(config::ConfigArgs),
    /// Serve query plans for `--workers` (every tracelake function registered).
    Worker(worker::WorkerArgs),
    /// Rebuild a damaged lake's state from the files it can read (asks first).
    Repair(repair::RepairArgs),
    /// Write deterministic synthetic traces with injected failure patterns.
    Generate(generate::GenerateArgs),
    /// Move a lake made by an earlier release onto its tables' Delta logs (in place).
    Upgrade(upgrade::UpgradeArgs),
    /// Merge each partition's small files (from collect and frequent exports) into one.
    Compact(compact::CompactArgs),
    /// Delete the files earlier commits replaced, once older than the retention (7 days).
    Vacuum(vacuum::VacuumArgs),
}

/// Settings every command shares.
pub struct Ctx {
    pub config: Config,
    /// The file `config` was read from, if any.
    pub config_file: Option<PathBuf>,
    pub lake: Option<PathBuf>,
}

impl Ctx {
    pub fn lake(&self) -> anyhow::Result<Lake> {
        let location = self.lake.as_ref().context("no lake given: pass --lake DIR (or --lake s3://BUCKET/PREFIX) or set TRACELAKE_LAKE")?;
        Ok(Lake::open(&location.to_string_lossy(), &self.config.storage.options)?)
    }

    /// The lake, which must exist: commands other than `import` and `export` never make
    /// one (in a folder of other files, or at a mistyped path).
    pub fn existing_lake(&self) -> anyhow::Result<Lake> {
        let lake = self.lake()?;
        if !lake.exists()? {
            let at = lake.location();
            refuse_a_file(&lake)?;
            let what = if lake.remote().is_some() || !lake.root().exists() { "does not exist" } else { "holds no lake" };
            let at = shell_word(&at);
            anyhow::bail!("{at} {what}: make a lake with `tracelake import --lake {at} FILE` or `tracelake export --lake {at}`");
        }
        Ok(lake)
    }

    /// The lake that `import` and `export` write: an existing one, or a new one in a new or
    /// empty directory (or object store prefix), never in a folder of other files.
    pub fn lake_to_write(&self) -> anyhow::Result<Lake> {
        let lake = self.lake()?;
        refuse_a_file(&lake)?;
        if lake.remote().is_none() && !lake.exists()? && !is_new_or_empty(lake.root())? {
            let dir = lake.root().display();
            anyhow::bail!("{dir} holds other files and no lake: make the lake in a new or empty directory");
        }
        Ok(lake)
    }

    pub fn redactor(&self) -> anyhow::Result<Redactor> {
        Redactor::new(&self.config.redact_patterns).context("check `traceAnalyzer.redactPatterns` in the config file")
    }

    /// The decoder of raw input into `lake`: secrets redacted and, if the config asks for
    /// it (`privacy.pii`), personal data replaced.
    pub fn decoder(&self, lake: &Lake) -> anyhow::Result<Decoder> {
        let pii = &self.config.privacy.pii;
        let pii = if pii.enabled {
            let key = match pii.action {
                PiiAction::Pseudonymize => tracelake::lake::secret::pii_key(lake).context("reading the lake's pseudonym key")?,
                PiiAction::Remove => Vec::new(),
            };
            Some(Arc::new(Pii::new(&pii.kinds, pii.action, key)))
        } else {
            None
        };
        Ok(Decoder::new(self.redactor()?).with_pii(pii))
    }

    /// The query engine the config chooses (languages, chain settings).
    pub fn engine(&self) -> anyhow::Result<EngineOptions> {
        EngineOptions::from_config(&self.config).context("check `patterns.language` and `traceAnalyzer.toolPatterns` in the config file")
    }

    /// Says, once the worker has answered, that a single worker takes no part: a stage
    /// crosses the network only when it has two or more tasks (datafusion-distributed
    /// plans one with one task in the coordinating process).
    pub fn note_single_worker(&self) {
        if let [worker] = self.config.workers.as_slice() {
            eprintln!(
                "note: with one worker ({worker}) the plan runs in this process: a stage goes to the workers only in two or more tasks; give two or more workers"
            );
        }
    }
}

/// Whether `dir` does not exist or has nothing in it.
/// A lake is a directory: `--lake` naming a file (often the traces to import) is refused
/// with the command that was likely meant.
fn refuse_a_file(lake: &Lake) -> anyhow::Result<()> {
    if lake.remote().is_none() && lake.root().is_file() {
        let file = shell_word(&lake.location());
        anyhow::bail!(
            "{file} is a file: --lake names the directory a lake is kept in; to make one of this file, `tracelake import --lake DIR {file}`"
        );
    }
    Ok(())
}

/// Parses one of a library type's names (by its `FromStr`), listing them in `--help` and
/// in the error for any other, as `value_enum` does for the command line's own enums.
pub fn one_of<T: std::str::FromStr<Err: std::error::Error + Send + Sync + 'static> + Clone + Send + Sync + 'static>(
    names: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<T>())
}

pub fn is_new_or_empty(dir: &std::path::Path) -> anyhow::Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let lake = cli.lake.clone();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            let said = match lake
                .as_ref()
                .filter(|l| is_parquet_error(&e) && !l.to_string_lossy().contains("://"))
                .map(|l| unreadable_committed(&Lake::new(l.clone())))
                .filter(|bad| !bad.is_empty())
            {
                // Name the damaged files once, instead of the reader's nested message.
                Some(bad) => {
                    let files: Vec<String> = bad.iter().map(|(f, why)| format!("{f} ({})", why_unreadable(why))).collect();
                    format!(
                        "{} file(s) of the lake do not read as Parquet: {}. Restore them from a backup, or run `tracelake repair` to move them aside",
                        bad.len(),
                        files.join(", ")
                    )
                }
                // The pool's message once, instead of once per operator that passed it on.
                None if let Some(root) = out_of_memory(&e) => format!(
                    "{root}\nThe query needs more memory than the engine's pool (1 GiB by default): select fewer rows or columns, or raise the pool first with `SET datafusion.runtime.memory_limit = '4G';`"
                ),
                // Which worker, without the channel's nested account of the failed connection.
                None if let Some(unreachable) = e.chain().find_map(|c| c.downcast_ref::<WorkerUnreachable>()) => unreachable.to_string(),
                None => message(&e),
            };
            // The commands an error points to name the lake the command was given.
            let said = match &lake {
                Some(lake) => with_lake(&said, &lake.to_string_lossy()),
                None => said,
            };
            eprintln!("error: {said}");
            ExitCode::from(1)
        }
    }
}

/// `e` and its causes on one line, each said once: many errors repeat their source's text
/// in their own (DataFusion's and io's do), so that the plain chain would say it twice or
/// four times.
pub fn message(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|said| said.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// Whether a Parquet reader's error ended the command: the reader's own, or a page's
/// that it passed on as Arrow's.
fn is_parquet_error(e: &anyhow::Error) -> bool {
    use datafusion::arrow::error::ArrowError;
    use datafusion::error::DataFusionError;
    e.chain().any(|c| {
        c.downcast_ref::<DataFusionError>().is_some_and(|d| match d.find_root() {
            DataFusionError::ParquetError(_) => true,
            DataFusionError::ArrowError(arrow, _) => matches!(**arrow, ArrowError::ParquetError(_)),
            _ => false,
        }) || c.downcast_ref::<datafusion::parquet::errors::ParquetError>().is_some()
    })
}

/// The memory pool's refusal behind `e`, if that is what ended the command.
fn out_of_memory(e: &anyhow::Error) -> Option<&datafusion::error::DataFusionError> {
    e.chain().find_map(|c| {
        let error = c.downcast_ref::<datafusion::error::DataFusionError>()?;
        pool_exhausted(error).then(|| error.find_root())
    })
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    tracelake::detect::signals::check_settings(&config)?;
    if !cli.workers.is_empty() {
        config.workers = cli.workers;
    }
    let ctx = Ctx { config, config_file: cli.config, lake: cli.lake };
    // `sql` says so when its session opens, before a prompt.
    let plans_on_workers = matches!(
        cli.command,
        Command::Demo(_)
            | Command::Analyze(_)
            | Command::Outcomes(_)
            | Command::Score(_)
            | Command::Factors(_)
            | Command::Risk(_)
            | Command::Brief(_)
            | Command::Report(_)
            | Command::Status(_)
    );
    if let Some(says) = on_interrupt_says(&cli.command) {
        interrupt::exit_on_interrupt(move || says.to_owned())?;
    }
    let ran = match cli.command {
        Command::Demo(args) => block_on(demo::run(&ctx, args)),
        Command::Import(args) => import::run(&ctx, args),
        Command::Export(args) => block_on(export::run(&ctx, args)),
        Command::Collect(args) => block_on(collect::run(&ctx, args)),
        Command::Analyze(args) => block_on(analyze::run(&ctx, args)),
        Command::Outcomes(args) => outcomes::run(&ctx, args),
        Command::Score(args) => block_on(score::run(&ctx, args)),
        Command::Factors(args) => block_on(factors::run(&ctx, args)),
        Command::Risk(args) => block_on(risk::run(&ctx, args)),
        Command::Brief(args) => block_on(brief::run(&ctx, args)),
        Command::Functions(args) => functions::run(&ctx, args),
        Command::Report(args) => block_on(report::run(&ctx, args)),
        Command::Sql(args) => block_on(sql::run(&ctx, args)),
        Command::Watch(args) => block_on(watch::run(&ctx, args)),
        Command::Status(args) => block_on(status::run(&ctx, args)),
        Command::Config(args) => config::run(&ctx, args),
        Command::Repair(args) => repair::run(&ctx, args),
        Command::Worker(args) => block_on(worker::run(&ctx, args)),
        Command::Generate(args) => generate::run(args),
        Command::Upgrade(args) => upgrade::run(&ctx, args),
        Command::Compact(args) => compact::run(&ctx, args),
        Command::Vacuum(args) => vacuum::run(&ctx, args),
    };
    if plans_on_workers && ran.is_ok() {
        ctx.note_single_worker();
    }
    ran
}

/// What a command that ends at Ctrl-C or SIGTERM says then; `None` for those that handle it
/// themselves (they stop at a point where nothing is lost) or make no temporary files.
fn on_interrupt_says(command: &Command) -> Option<&'static str> {
    match command {
        Command::Import(_)
        | Command::Export(_)
        | Command::Collect(_)
        | Command::Watch(_)
        | Command::Worker(_)
        | Command::Sql(_)
        | Command::Config(_)
        | Command::Functions(_)
        | Command::Generate(_) => None,
        Command::Analyze(_) | Command::Outcomes(_) | Command::Risk(_) | Command::Repair(_) | Command::Upgrade(_) | Command::Compact(_) => {
            Some("interrupted: what this command writes is committed whole or not at all; `tracelake status` shows the lake")
        }
        Command::Vacuum(_) => Some("interrupted: the files it did not delete yet are deleted by the next vacuum"),
        Command::Demo(_) | Command::Score(_) | Command::Factors(_) | Command::Brief(_) | Command::Report(_) | Command::Status(_) => {
            Some("interrupted")
        }
    }
}

fn block_on<F: std::future::Future<Output = anyhow::Result<ExitCode>>>(future: F) -> anyhow::Result<ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(tracelake::memory::answer_requests)
        // Files are read on the blocking pool's threads, which never park: the buffers they
        // allocate stay in their heaps, even when freed elsewhere, until they exit.
        .thread_keep_alive(std::time::Duration::from_millis(50))
        .build()
        .context("starting the async runtime")?
        .block_on(future)
}

/// `3 quarantined (invalid_json 2, too_large 1)`, or `0 quarantined`.
pub fn quarantined_text(counts: &std::collections::BTreeMap<tracelake::ingest::QuarantineReason, u64>) -> String {
    let total: u64 = counts.values().sum();
    if counts.is_empty() {
        return format!("{total} quarantined");
    }
    let reasons: Vec<String> = counts.iter().map(|(r, n)| format!("{r} {n}")).collect();
    format!("{total} quarantined ({})", reasons.join(", "))
}

/// Events per second, 0 for no time.
pub fn rate(events: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { events as f64 / seconds } else { 0.0 }
}

/// `1234567` → `1.2 MB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}
