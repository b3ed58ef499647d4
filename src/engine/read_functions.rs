//! DuckDB's table functions that read files: `read_parquet('x.parquet')`, `read_csv(…)`,
//! `read_json(…)` and their `_auto` names. The argument is a file, a directory or a glob
//! (`'traces/*.jsonl'`); the format is the function's, whatever the files' extensions
//! (`read_json('agent.log')`), where a path alone (`FROM 'x.jsonl'`) goes by extension.

use std::io::Read;
use std::sync::Arc;

use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{ScalarValue, plan_datafusion_err, plan_err};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;

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

#[derive(Debug, Clone, Copy)]
enum Format {
    Parquet,
    Csv,
    Json,
}

impl Format {
    /// The format of the files at `path`: JSON is JSON Lines unless the file opens with `[`
    /// (one array of records), which DuckDB's `read_json` tells apart too.
    fn file_format(self, path: &str) -> Arc<dyn FileFormat> {
        match self {
            Format::Parquet => Arc::new(ParquetFormat::default()),
            Format::Csv => Arc::new(CsvFormat::default().with_has_header(true)),
            Format::Json => Arc::new(JsonFormat::default().with_newline_delimited(!opens_an_array(path))),
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
        let [Expr::Literal(ScalarValue::Utf8(Some(path)) | ScalarValue::LargeUtf8(Some(path)) | ScalarValue::Utf8View(Some(path)), _)] =
            args.exprs()
        else {
            let (name, extension) = (self.name, self.format.extension());
            return plan_err!(
                "{name} takes one path here, in quotes: a file, a directory or a glob ({name}('traces/*{extension}')); \
                 for other options, CREATE EXTERNAL TABLE"
            );
        };
        let name = self.name;
        let urls = table_urls(name, path)?;
        // Files named are read whatever their extension; a directory's are those of the format.
        let extension = if let [url] = urls.as_slice()
            && url.is_collection()
        {
            self.format.extension()
        } else {
            ""
        };
        let options = ListingOptions::new(self.format.file_format(path)).with_file_extension(extension);
        let schema = infer_schema(args.session(), &options, &urls[0])
            .map_err(|e| plan_datafusion_err!("{name}('{path}'): {}", e.find_root().message()))?;
        let config = ListingTableConfig::new_with_multi_paths(urls).with_listing_options(options).with_schema(schema);
        Ok(Arc::new(ListingTable::try_new(config)?))
    }
}

/// The files or directory `path` names. A local glob is expanded here, so that it may span
/// directories (`lake/events/*/*.parquet`), which a listing's own glob does not.
fn table_urls(name: &str, path: &str) -> Result<Vec<ListingTableUrl>> {
    let is_glob = path.contains(['*', '?', '[']);
    if path.contains("://") {
        return Ok(vec![ListingTableUrl::parse(path)?]);
    }
    if !is_glob {
        if !std::path::Path::new(path).exists() {
            return plan_err!("{name}('{path}'): no such file or directory");
        }
        return Ok(vec![ListingTableUrl::parse(path)?]);
    }
    let matches = glob::glob(path).map_err(|e| plan_datafusion_err!("{name}('{path}'): {e}"))?;
    let files: Vec<std::path::PathBuf> = matches.filter_map(std::result::Result::ok).filter(|p| p.is_file()).collect();
    if files.is_empty() {
        return plan_err!("{name}('{path}'): no file matches");
    }
    files.iter().map(|file| ListingTableUrl::parse(file.to_string_lossy())).collect()
}

/// Whether the file at `path` (not a directory or a glob) starts with `[`.
fn opens_an_array(path: &str) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    std::io::BufReader::new(file).bytes().map_while(Result::ok).find(|b| !b.is_ascii_whitespace()) == Some(b'[')
}

/// The files' schema, read while the query is planned: planning is not async, so the
/// files are read on a thread of its own.
fn infer_schema(session: &dyn Session, options: &ListingOptions, url: &ListingTableUrl) -> Result<datafusion::arrow::datatypes::SchemaRef> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                runtime.block_on(options.infer_schema(session, url))
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
        assert!(no_path.to_string().contains("read_csv takes one path here, in quotes"), "{no_path}");
    }
}
