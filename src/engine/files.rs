//! Files queried by path, as in datafusion-cli: `SELECT … FROM 'traces.jsonl'`. Parquet,
//! CSV and JSON Lines, the format chosen by the extension (`.jsonl` and `.ndjson` read as
//! JSON Lines too).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::common::GetExt;
use datafusion::datasource::file_format::json::JsonFormatFactory;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// `ctx`, with a file path accepted wherever a table name is.
pub fn with_file_tables(ctx: SessionContext) -> Result<SessionContext> {
    let ctx = ctx.enable_url_table();
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
