//! Files queried by path, as in datafusion-cli: `SELECT … FROM 'traces.jsonl'`. Parquet,
//! CSV and JSON Lines, the format chosen by the extension (`.jsonl` and `.ndjson` read as
//! JSON Lines too).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::GetExt;
use datafusion::datasource::file_format::json::JsonFormatFactory;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

/// `ctx`, with a file path accepted wherever a table name is, and DuckDB's functions
/// that read files (`read_parquet`, …).
pub fn with_file_tables(ctx: SessionContext) -> Result<SessionContext> {
    let ctx = ctx.enable_url_table();
    super::read_functions::register_read_functions(&ctx);
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        for ext in ["jsonl", "ndjson"] {
            state.register_file_format(Arc::new(JsonLines { ext }), false)?;
        }
    }
    Ok(ctx)
}

/// JSON Lines under another extension.
#[derive(Debug)]
struct JsonLines {
    ext: &'static str,
}

impl GetExt for JsonLines {
    fn get_ext(&self) -> String {
        self.ext.to_owned()
    }
}

impl FileFormatFactory for JsonLines {
    fn create(&self, state: &dyn Session, format_options: &HashMap<String, String>) -> Result<Arc<dyn FileFormat>> {
        JsonFormatFactory::new().create(state, format_options)
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        FileFormatFactory::default(&JsonFormatFactory::new())
    }
}

/// Extensions read as tables by path.
const EXTENSIONS: [&str; 6] = ["parquet", "csv", "json", "jsonl", "ndjson", "arrow"];

/// The table a query named that the session does not know, as DataFusion reports it
/// (`table 'datafusion.public.x' not found`).
pub fn unknown_table(error: &DataFusionError) -> Option<&str> {
    let DataFusionError::Plan(message) = error.find_root() else { return None };
    let name = message.strip_prefix("table '")?.strip_suffix("' not found")?;
    Some(name.strip_prefix("datafusion.public.").unwrap_or(name))
}

/// Whether an unknown table's `name` ([`unknown_table`]) is the path of a file that does
/// not exist: DataFusion reports such a path as an unknown table.
pub fn is_missing_file(name: &str) -> bool {
    let path = std::path::Path::new(name);
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else { return false };
    let looks_like_file = name.contains('/') || EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str());
    looks_like_file && !path.exists()
}
