//! DuckDB's table functions that read files: `read_parquet('x.parquet')`, `read_csv(…)`,
//! `read_json(…)` and their `_auto` names. The first argument is a file, a directory or a
//! glob (`'traces/*.jsonl'`), or a list of them; the format is the function's, whatever the
//! files' extensions (`read_json('agent.log')`). Options follow by name, as in DuckDB
//! (`read_csv('x.csv', delim = ';', header = false)`); a CSV's delimiter and whether its
//! first line is a header, unless given, are told from its first lines, and a JSON file is
//! one array of records when it opens with `[`.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_err};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;

use super::EngineError;
use super::session::did_you_mean;

/// A read call's own error, carried whole through DataFusion to the user.
fn read_error(message: String) -> DataFusionError {
    DataFusionError::External(Box::new(EngineError::ReadCall(message)))
}

/// The functions by DuckDB's names, each with the format it reads.
const READ_FUNCTIONS: [(&str, Format); 8] = [
    ("read_parquet", Format::Parquet),
    ("parquet_scan", Format::Parquet),
    ("read_csv", Format::Csv),
    ("read_csv_auto", Format::Csv),
    ("read_json", Format::Json),
    ("read_json_auto", Format::Json),
    ("read_ndjson", Format::Json),
    ("read_ndjson_auto", Format::Json),
];

/// Extensions of compressed files, which this build does not read.
const COMPRESSED: [&str; 5] = ["gz", "zst", "zstd", "bz2", "xz"];
const NOT_DECOMPRESSED: &str = "compressed files are not read here; decompress it first (gunzip -k FILE, zstd -d FILE)";

/// The file formats read here, and written by `COPY` ([`super::copy_options`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    Parquet,
    Csv,
    Json,
}

impl Format {
    /// The format of a file's extension, also DuckDB's name of the format (`FORMAT csv`):
    /// `.csv` and `.tsv`, `.json`, `.jsonl` and `.ndjson`, `.parquet`.
    pub fn of_extension(extension: &str) -> Option<Format> {
        match extension.to_ascii_lowercase().as_str() {
            "csv" | "tsv" => Some(Format::Csv),
            "json" | "jsonl" | "ndjson" => Some(Format::Json),
            "parquet" => Some(Format::Parquet),
            _ => None,
        }
    }

    /// Its name, as DuckDB's `FORMAT` and DataFusion's `STORED AS` take it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }

    /// The format of the files, `first` the first of them when local.
    fn file_format(self, options: &ReadOptions, first: Option<&Path>) -> Arc<dyn FileFormat> {
        match self {
            Format::Parquet => Arc::new(ParquetFormat::default()),
            Format::Csv => {
                let sniffed = first.and_then(sniff_csv);
                let delimiter = options.delimiter.or(sniffed.as_ref().and_then(|s| s.delimiter)).unwrap_or(b',');
                let header = options.header.unwrap_or(sniffed.is_none_or(|s| s.header));
                let mut csv = CsvFormat::default()
                    .with_has_header(header)
                    .with_delimiter(delimiter)
                    .with_escape(options.escape)
                    .with_comment(options.comment);
                if let Some(quote) = options.quote {
                    csv = csv.with_quote(quote);
                }
                if let Some(rows) = options.sample_size {
                    csv = csv.with_schema_infer_max_rec(rows);
                }
                Arc::new(csv)
            }
            // JSON Lines unless the file opens with `[` (one array of records), which
            // DuckDB's `read_json` tells apart too.
            Format::Json => {
                let array = options.json_array.unwrap_or_else(|| first.is_some_and(opens_an_array));
                let mut json = JsonFormat::default().with_newline_delimited(!array);
                if let Some(rows) = options.sample_size {
                    json = json.with_schema_infer_max_rec(rows);
                }
                Arc::new(json)
            }
        }
    }

    /// The extension of the files read from a directory.
    fn extension(self) -> &'static str {
        match self {
            Format::Parquet => ".parquet",
            Format::Csv => ".csv",
            Format::Json => ".json",
        }
    }

    /// The options the format's functions take, by every name.
    fn options(self) -> &'static [&'static str] {
        match self {
            Format::Parquet => &["hive_partitioning"],
            Format::Csv => {
                &["header", "delim", "sep", "delimiter", "quote", "escape", "comment", "sample_size", "compression", "hive_partitioning"]
            }
            Format::Json => &["format", "sample_size", "compression", "hive_partitioning"],
        }
    }

    /// The options the format's functions take, as a user reads them.
    fn option_names(self) -> &'static str {
        match self {
            Format::Parquet => "hive_partitioning",
            Format::Csv => "header, delim (or sep), quote, escape, comment, sample_size, hive_partitioning",
            Format::Json => "format ('array' or 'newline_delimited'), sample_size, hive_partitioning",
        }
    }
}

/// Whether `path` is a glob (`traces/*.jsonl`).
pub fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// Whether `name` is one of DuckDB's read functions.
pub fn is_read_function(name: &str) -> bool {
    READ_FUNCTIONS.iter().any(|(function, _)| function.eq_ignore_ascii_case(name))
}

/// The read function of a file by its extension (a compressed file's by the one before,
/// [`Format::of_extension`]): `read_csv`, `read_json` or `read_parquet`.
pub fn read_function_of(path: &str) -> Option<&'static str> {
    let file = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let mut extensions = file.rsplit('.');
    let last = extensions.next()?;
    let extension = if COMPRESSED.contains(&last) { extensions.next()? } else { last };
    let format = Format::of_extension(extension)?;
    READ_FUNCTIONS.iter().find(|(_, f)| *f == format).map(|(name, _)| *name)
}

/// A CSV option's character as DuckDB writes it: `'\t'` is a tab.
pub fn unescaped_character(text: &str) -> &str {
    if text == "\\t" { "\t" } else { text }
}

/// Registers DuckDB's file-reading table functions with `ctx`.
pub fn register_read_functions(ctx: &SessionContext) {
    for (name, format) in READ_FUNCTIONS {
        ctx.register_udtf(name, Arc::new(ReadFiles { name, format }));
    }
}

#[derive(Debug)]
struct ReadFiles {
    name: &'static str,
    format: Format,
}

impl TableFunctionImpl for ReadFiles {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let (name, extension) = (self.name, self.format.extension());
        let (paths, options) = match args.exprs() {
            [first, options @ ..] => (paths_of(first), options),
            [] => (None, &[][..]),
        };
        let Some(paths) = paths else {
            return Err(read_error(format!(
                "{name} takes a path in quotes (a file, a directory or a glob: {name}('traces/*{extension}')) or a list of them \
                 (['a{extension}', 'b{extension}']), then options by name ({name}('x{extension}', option = value))"
            )));
        };
        let call = match paths.as_slice() {
            [path] => format!("{name}('{path}')"),
            _ => format!("{name}(['{}'])", paths.join("', '")),
        };
        let options = ReadOptions::of(&call, self.format, options)?;
        let mut urls = Vec::new();
        for path in &paths {
            if path.rsplit('.').next().is_some_and(|e| COMPRESSED.contains(&e.to_ascii_lowercase().as_str())) {
                return Err(read_error(format!("{call}: {NOT_DECOMPRESSED}")));
            }
            urls.extend(table_urls(&call, path)?);
        }
        let hive = options.hive_partitioning != Some(false);
        // Files named are read whatever their extension; a directory's are those of the format,
        // and a glob over partition folders is read as the folder above them.
        let mut extension = if let [url] = urls.as_slice()
            && url.is_collection()
        {
            extension
        } else {
            ""
        };
        let first = urls.iter().find_map(|url| url.get_url().to_file_path().ok().filter(|path| path.is_file()));
        if let ([path], true) = (paths.as_slice(), hive)
            && let Some((root, files)) = partitioned_glob(path, &urls)
        {
            urls = vec![ListingTableUrl::parse(root)?];
            extension = files;
        }
        let listing = ListingOptions::new(self.format.file_format(&options, first.as_deref())).with_file_extension(extension);
        let (schema, partitions) = infer_schema(args.session(), &listing, &urls[0], hive && urls.len() == 1)
            .map_err(|e| read_error(format!("{call}: {}", e.find_root().message())))?;
        let listing = listing.with_table_partition_cols(partitions.into_iter().map(|column| (column, DataType::Utf8)).collect());
        let config = ListingTableConfig::new_with_multi_paths(urls).with_listing_options(listing).with_schema(schema);
        Ok(Arc::new(ListingTable::try_new(config)?))
    }
}

/// The paths a call's first argument names: a text, or a list of texts (which DataFusion
/// hands over as the list it makes of constants).
fn paths_of(expr: &Expr) -> Option<Vec<String>> {
    let Expr::Literal(value, _) = expr else { return None };
    match value {
        ScalarValue::List(list) if list.len() == 1 => {
            let paths = list.value(0);
            (0..paths.len()).map(|i| text_of(&ScalarValue::try_from_array(&paths, i).ok()?).map(str::to_owned)).collect()
        }
        value => Some(vec![text_of(value)?.to_owned()]),
    }
}

fn text_of(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(text)) | ScalarValue::LargeUtf8(Some(text)) | ScalarValue::Utf8View(Some(text)) => Some(text),
        _ => None,
    }
}

/// A call's options by name, DuckDB's names and meanings (see [`super::read_calls`] for
/// how they arrive: `named_struct('delim', ';')`).
#[derive(Debug, Default)]
struct ReadOptions {
    header: Option<bool>,
    delimiter: Option<u8>,
    quote: Option<u8>,
    escape: Option<u8>,
    comment: Option<u8>,
    sample_size: Option<usize>,
    json_array: Option<bool>,
    /// Whether `key=value` folders are columns (DuckDB's `hive_partitioning`); by default
    /// they are where every file lies in such folders.
    hive_partitioning: Option<bool>,
}

impl ReadOptions {
    fn of(call: &str, format: Format, exprs: &[Expr]) -> Result<Self> {
        let mut options = ReadOptions::default();
        for expr in exprs {
            let Some((option, value)) = named_option(expr) else {
                let text = if let Expr::Literal(value, _) = expr { text_of(value) } else { None };
                let given = text.map_or_else(|| expr.human_display().to_string(), |text| format!("'{text}'"));
                return Err(read_error(format!("{call}: after the path come options by name (option = value), not {given}")));
            };
            let value = OptionValue { call, option: &option, value: &value };
            match (format, option.as_str()) {
                (Format::Csv, "header") => options.header = Some(value.boolean()?),
                (Format::Csv, "delim" | "sep" | "delimiter") => options.delimiter = Some(value.character()?),
                (Format::Csv, "quote") => options.quote = Some(value.character()?),
                (Format::Csv, "escape") => options.escape = Some(value.character()?),
                (Format::Csv, "comment") => options.comment = Some(value.character()?),
                (Format::Csv | Format::Json, "sample_size") => options.sample_size = Some(value.rows()?),
                (_, "hive_partitioning") => options.hive_partitioning = Some(value.boolean()?),
                (Format::Json, "format") => {
                    options.json_array = match value.text()? {
                        "auto" => None,
                        "array" => Some(true),
                        "newline_delimited" | "nd" => Some(false),
                        other => {
                            return Err(read_error(format!("{call}: format is 'array', 'newline_delimited' or 'auto', not '{other}'")));
                        }
                    }
                }
                (Format::Csv | Format::Json, "compression") => match value.text()? {
                    "auto" | "none" => {}
                    _ => return Err(read_error(format!("{call}: {NOT_DECOMPRESSED}"))),
                },
                _ => {
                    let nearest = crate::config::nearest_within(&option, format.options(), 2);
                    return Err(read_error(format!(
                        "{call}: no option {option} here{}; options: {}",
                        did_you_mean(nearest),
                        format.option_names()
                    )));
                }
            }
        }
        Ok(options)
    }
}

/// `named_struct('delim', ';')` as `("delim", ';')`: DataFusion hands it over as the
/// struct it makes of constants.
fn named_option(expr: &Expr) -> Option<(String, ScalarValue)> {
    let Expr::Literal(ScalarValue::Struct(option), _) = expr else { return None };
    let [field] = option.fields().iter().collect::<Vec<_>>()[..] else { return None };
    let value = ScalarValue::try_from_array(option.column(0), 0).ok()?;
    Some((field.name().clone(), value))
}

/// One option's value, read as the option needs it.
struct OptionValue<'a> {
    call: &'a str,
    option: &'a str,
    value: &'a ScalarValue,
}

impl OptionValue<'_> {
    fn wrong<T>(&self, wanted: &str) -> Result<T> {
        Err(read_error(format!("{}: {} takes {wanted}, not {}", self.call, self.option, self.value)))
    }

    fn boolean(&self) -> Result<bool> {
        match self.value {
            ScalarValue::Boolean(Some(b)) => Ok(*b),
            _ => self.wrong("true or false"),
        }
    }

    fn text(&self) -> Result<&str> {
        text_of(self.value).map_or_else(|| self.wrong("a text in quotes"), Ok)
    }

    /// One ASCII character; `'\t'` is a tab, as in DuckDB.
    fn character(&self) -> Result<u8> {
        match self.text().map(unescaped_character) {
            Ok(text) if text.len() == 1 && text.is_ascii() => Ok(text.as_bytes()[0]),
            _ => self.wrong("one character in quotes"),
        }
    }

    /// A count of rows; -1 is all of them, as in DuckDB.
    fn rows(&self) -> Result<usize> {
        match self.value.cast_to(&datafusion::arrow::datatypes::DataType::Int64) {
            Ok(ScalarValue::Int64(Some(-1))) => Ok(usize::MAX),
            Ok(ScalarValue::Int64(Some(n))) if n > 0 => Ok(n as usize),
            _ => self.wrong("a number of rows (-1 for all)"),
        }
    }
}

/// How many bytes of a CSV file are read to tell its delimiter and header, and how many
/// lines.
const SNIFF_BYTES: u64 = 64 * 1024;
const SNIFF_LINES: usize = 20;

/// What a CSV file's first lines tell, as DuckDB's sniffer tells it.
#[derive(Debug, PartialEq)]
struct Sniffed {
    /// Of `,`, tab, `;` and `|`, the one that splits each line into the same number of
    /// fields, and into the most; none when no delimiter does.
    delimiter: Option<u8>,
    /// Whether the first line names the columns: it does unless some column below it holds
    /// numbers and each of its fields is of its column's kind (`1,x` over `2,y` is data,
    /// `1.5,2` over `3,4` and `name,city` over `bob,paris` are names), as DuckDB tells.
    header: bool,
}

fn sniff_csv(file: &Path) -> Option<Sniffed> {
    let mut head = Vec::new();
    std::fs::File::open(file).ok()?.take(SNIFF_BYTES).read_to_end(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head);
    let mut lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
    if head.len() as u64 == SNIFF_BYTES {
        lines.pop(); // cut short
    }
    lines.truncate(SNIFF_LINES);
    let mut best: Option<(u8, usize)> = None;
    for delimiter in [b',', b'\t', b';', b'|'] {
        let mut fields = lines.iter().map(|line| fields_of(line, delimiter).len());
        let first = fields.next()?;
        if first > 1 && fields.all(|n| n == first) && best.is_none_or(|(_, most)| first > most) {
            best = Some((delimiter, first));
        }
    }
    let delimiter = best.map(|(delimiter, _)| delimiter);
    let rows: Vec<Vec<&str>> = lines.iter().map(|line| fields_of(line, delimiter.unwrap_or(b','))).collect();
    let header = match rows.split_first() {
        Some((first, rest)) if !rest.is_empty() => {
            let columns: Vec<Kind> = (0..first.len())
                .map(|c| rest.iter().filter_map(|row| row.get(c).and_then(|v| kind_of(v))).max().unwrap_or(Kind::Text))
                .collect();
            let fits = first.iter().zip(&columns).all(|(value, column)| kind_of(value).is_none_or(|kind| kind <= *column));
            !(fits && columns.iter().any(|c| *c != Kind::Text))
        }
        _ => true,
    };
    Some(Sniffed { delimiter, header })
}

/// What a CSV field holds, each kind taking the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Integer,
    Number,
    Text,
}

/// The kind of a field; `None` for an empty one, which fits every kind.
fn kind_of(field: &str) -> Option<Kind> {
    let field = field.trim();
    if field.is_empty() {
        None
    } else if field.parse::<i64>().is_ok() {
        Some(Kind::Integer)
    } else if field.parse::<f64>().is_ok_and(f64::is_finite) {
        Some(Kind::Number)
    } else {
        Some(Kind::Text)
    }
}

/// The fields `delimiter` splits a line into, outside double quotes (with their quotes).
fn fields_of(line: &str, delimiter: u8) -> Vec<&str> {
    let mut quoted = false;
    let mut fields = Vec::new();
    let mut start = 0;
    for (i, b) in line.bytes().enumerate() {
        if b == b'"' {
            quoted = !quoted;
        } else if b == delimiter && !quoted {
            fields.push(&line[start..i]);
            start = i + 1;
        }
    }
    fields.push(&line[start..]);
    fields
}

/// The files or directory `path` names. A local glob is expanded here, so that it may span
/// directories (`lake/events/*/*.parquet`), which a listing's own glob does not.
fn table_urls(call: &str, path: &str) -> Result<Vec<ListingTableUrl>> {
    if path.contains("://") {
        return Ok(vec![ListingTableUrl::parse(path)?]);
    }
    if !is_glob(path) {
        if !std::path::Path::new(path).exists() {
            return Err(read_error(format!("{call}: no such file or directory")));
        }
        return Ok(vec![ListingTableUrl::parse(path)?]);
    }
    let matches = glob::glob(path).map_err(|e| read_error(format!("{call}: {e}")))?;
    let files: Vec<std::path::PathBuf> = matches.filter_map(std::result::Result::ok).filter(|p| p.is_file()).collect();
    if files.is_empty() {
        return Err(read_error(format!("{call}: no file matches")));
    }
    files.iter().map(|file| ListingTableUrl::parse(file.to_string_lossy())).collect()
}

/// A glob over partition folders (`exports/*/*.parquet`) as the folder before its first
/// pattern and the files' extension, where that folder's files of the extension are those
/// the glob matched (`files`) and each lies in `key=value` folders under it: read so, the
/// folders' values are columns (DataFusion's listing of a glob does not descend folders).
fn partitioned_glob<'a>(path: &'a str, files: &[ListingTableUrl]) -> Option<(String, &'a str)> {
    let segments: Vec<&str> = path.split('/').collect();
    let at = segments.iter().position(|s| is_glob(s)).filter(|at| *at > 0)?;
    let pattern = segments.last()?;
    let extension = pattern.strip_prefix('*').filter(|e| e.strip_prefix('.').is_some_and(|e| Format::of_extension(e).is_some()))?;
    let root = segments[..at].join("/");
    let base = std::path::Path::new(&root).canonicalize().ok()?;
    let partitioned = |file: &ListingTableUrl| {
        let Ok(path) = file.get_url().to_file_path() else { return false };
        let Some(folders) = path.parent().and_then(|p| p.strip_prefix(&base).ok()) else { return false };
        folders.components().next().is_some() && folders.components().all(|c| c.as_os_str().to_string_lossy().contains('='))
    };
    (files.iter().all(partitioned) && files_under(&base, extension) == files.len()).then(|| (root + "/", extension))
}

/// How many files under `dir`, its folders' included, end with `extension`.
fn files_under(dir: &Path, extension: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(std::result::Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => files_under(&entry.path(), extension),
            Ok(_) => usize::from(entry.file_name().to_string_lossy().ends_with(extension)),
            Err(_) => 0,
        })
        .sum()
}

/// Whether the file at `path` starts with `[`.
fn opens_an_array(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    std::io::BufReader::new(file).bytes().map_while(Result::ok).find(|b| !b.is_ascii_whitespace()) == Some(b'[')
}

/// The files' schema, and with `partitions` the `key=value` folders' keys under `url`,
/// read while the query is planned: planning is not async, so the files are read on a
/// thread of its own.
fn infer_schema(
    session: &dyn Session,
    options: &ListingOptions,
    url: &ListingTableUrl,
    partitions: bool,
) -> Result<(datafusion::arrow::datatypes::SchemaRef, Vec<String>)> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                runtime.block_on(async {
                    let schema = options.infer_schema(session, url).await?;
                    // Folders that are not all partitions (a table's `_delta_log/`) make none.
                    let mut keys = if partitions { options.infer_partitions(session, url).await.unwrap_or_default() } else { Vec::new() };
                    keys.retain(|key| schema.field_with_name(key).is_err());
                    Ok((schema, keys))
                })
            })
            .join()
            .unwrap_or_else(|_| plan_err!("reading the files' schema failed"))
    })
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, Int64Array};

    use super::*;

    async fn count(ctx: &SessionContext, sql: &str) -> Result<i64> {
        let batches = ctx.sql(sql).await?.collect().await?;
        let column = batches[0].column(0);
        Ok(column.as_any().downcast_ref::<Int64Array>().expect("a count").value(0))
    }

    #[tokio::test]
    async fn files_are_read_in_the_format_of_the_function_whatever_their_extension() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.log"), "{\"n\": 1}\n{\"n\": 2}\n").unwrap();
        std::fs::write(dir.path().join("b.json"), "{\"n\": 3}\n").unwrap();
        std::fs::write(dir.path().join("c.csv"), "n,word\n4,x\n5,y\n").unwrap();
        std::fs::write(dir.path().join("array.txt"), " [{\"n\": 6}, {\"n\": 7}]").unwrap();
        let ctx = SessionContext::new();
        register_read_functions(&ctx);
        let at = |name: &str| dir.path().join(name).display().to_string();
        assert_eq!(count(&ctx, &format!("SELECT sum(n) FROM read_json('{}')", at("a.log"))).await.unwrap(), 3);
        assert_eq!(count(&ctx, &format!("SELECT count(*) FROM read_json_auto('{}')", at("*.json"))).await.unwrap(), 1);
        assert_eq!(count(&ctx, &format!("SELECT sum(n) FROM read_csv('{}') WHERE word = 'y'", at("c.csv"))).await.unwrap(), 5);
        assert_eq!(count(&ctx, &format!("SELECT sum(n) FROM read_json('{}')", at("array.txt"))).await.unwrap(), 13, "an array of records");
        std::fs::create_dir(dir.path().join("day=1")).unwrap();
        std::fs::write(dir.path().join("day=1").join("d.json"), "{\"n\": 8}\n").unwrap();
        assert_eq!(
            count(&ctx, &format!("SELECT sum(n) FROM read_json('{}')", at("*/*.json"))).await.unwrap(),
            8,
            "a glob over directories"
        );
        let dir_path = dir.path().display();
        assert_eq!(
            count(&ctx, &format!("SELECT count(*) FROM read_ndjson('{dir_path}')")).await.unwrap(),
            2,
            "a directory's .json files, its folders' too"
        );

        let missing = count(&ctx, &format!("SELECT count(*) FROM read_parquet('{}')", at("none.parquet"))).await.unwrap_err();
        assert!(missing.to_string().ends_with("none.parquet'): no such file or directory"), "{missing}");
        let empty = tempfile::tempdir().unwrap();
        let nothing = count(&ctx, &format!("SELECT count(*) FROM read_csv('{}')", empty.path().display())).await.unwrap_err();
        assert!(nothing.to_string().contains("No files found"), "{nothing}");
        let no_match = count(&ctx, &format!("SELECT count(*) FROM read_json('{}')", at("*.none"))).await.unwrap_err();
        assert!(no_match.to_string().ends_with("*.none'): no file matches"), "{no_match}");
        let no_path = count(&ctx, "SELECT count(*) FROM read_csv(1)").await.unwrap_err();
        assert!(no_path.to_string().contains("read_csv takes a path in quotes"), "{no_path}");
    }

    /// `sql` as `tracelake sql` plans it: DuckDB's options by name made arguments.
    async fn rows_of(ctx: &SessionContext, sql: &str) -> Result<String> {
        let mut statement = datafusion::sql::parser::DFParser::parse_sql(sql)?.pop_front().expect("a statement");
        let _ = crate::engine::duckdb_forms::visit_statement(&mut statement, &mut crate::engine::read_calls::ReadCalls);
        let plan = ctx.state().statement_to_plan(statement).await?;
        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
        Ok(datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string())
    }

    #[tokio::test]
    async fn options_by_name_and_delimiters_told_from_the_lines() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(at("semi.csv"), "n;word\n1;\"a;b\"\n2;-\n").unwrap();
        std::fs::write(at("tabs.tsv"), "n\tword\n3\tx, y\n").unwrap();
        std::fs::write(at("bare.csv"), "4|x\n5|y\n").unwrap();
        std::fs::write(at("lines.json"), "{\"n\": 6}\n").unwrap();
        let ctx = SessionContext::new();
        register_read_functions(&ctx);
        let semi = rows_of(&ctx, &format!("SELECT n, word FROM read_csv('{}') ORDER BY n", at("semi.csv"))).await.unwrap();
        assert!(semi.contains("| 1 | a;b  |") && semi.contains("| 2 | -    |"), "a delimiter told, a quoted one kept:\n{semi}");
        let tabs = rows_of(&ctx, &format!("SELECT word FROM read_csv_auto('{}')", at("tabs.tsv"))).await.unwrap();
        assert!(tabs.contains("| x, y |"), "{tabs}");
        let bare = rows_of(&ctx, &format!("SELECT sum(column_1) AS s FROM read_csv('{}', header = false, delim => '|')", at("bare.csv")))
            .await
            .unwrap();
        assert!(bare.contains("| 9 |"), "{bare}");
        let sniffed = rows_of(&ctx, &format!("SELECT sum(column_1) AS s FROM read_csv('{}')", at("bare.csv"))).await.unwrap();
        assert!(sniffed.contains("| 9 |"), "a first line with a number over a column of numbers is data:\n{sniffed}");
        for (lines, header) in
            [("1,x\n2,y\n", false), ("1.5,2\n3,4\n", true), ("name,city\nbob,paris\n", true), ("year,2024\nq1,5\n", false)]
        {
            std::fs::write(at("kinds.csv"), lines).unwrap();
            assert_eq!(sniff_csv(Path::new(&at("kinds.csv"))).map(|s| s.header), Some(header), "{lines}");
        }
        let comments =
            rows_of(&ctx, &format!("SELECT count(*) AS c FROM read_csv('{}', comment = '2', sep = ';')", at("semi.csv"))).await.unwrap();
        assert!(comments.contains("| 1 |"), "a line that opens with the comment character is none:\n{comments}");
        std::fs::write(at("more.txt"), "n;word\n10;z\n").unwrap();
        let list = rows_of(&ctx, &format!("SELECT sum(n) AS s FROM read_csv(['{}', '{}'], delim = ';')", at("semi.csv"), at("more.txt")))
            .await
            .unwrap();
        assert!(list.contains("| 13 |"), "a list of files:\n{list}");
        let json = format!("SELECT count(*) AS c FROM read_json('{}', sample_size = -1, format = 'newline_delimited')", at("lines.json"));
        assert!(rows_of(&ctx, &json).await.unwrap().contains("| 1 |"));

        let said = |sql: String| {
            let ctx = ctx.clone();
            async move { rows_of(&ctx, &sql).await.unwrap_err().to_string() }
        };
        let unknown = said(format!("SELECT * FROM read_csv('{}', delimiter_x = ';')", at("semi.csv"))).await;
        assert!(unknown.contains("no option delimiter_x here (did you mean delimiter?); options: header, delim"), "{unknown}");
        let wrong = said(format!("SELECT * FROM read_csv('{}', delim = ';;')", at("semi.csv"))).await;
        assert!(wrong.contains("delim takes one character in quotes, not ;;"), "{wrong}");
        let format = said(format!("SELECT * FROM read_json('{}', format = 'records')", at("lines.json"))).await;
        assert!(format.contains("format is 'array', 'newline_delimited' or 'auto'"), "{format}");
        let parquet = said(format!("SELECT * FROM read_parquet('{}', union_by_name = true)", at("x.parquet"))).await;
        assert!(parquet.contains("no option union_by_name here; options: hive_partitioning"), "{parquet}");
        let compressed = said(format!("SELECT * FROM read_json('{}.gz')", at("lines.json"))).await;
        assert!(compressed.contains("compressed files are not read here"), "{compressed}");
    }
}
