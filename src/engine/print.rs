//! Printing query results as a table, CSV, JSON or NDJSON.

use std::io::Write;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::util::pretty::pretty_format_batches;

use super::EngineError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrintFormat {
    Table,
    Csv,
    Json,
    Ndjson,
}

impl PrintFormat {
    /// Writes `batches` (with `schema`, for headers when there are no rows).
    pub fn write(self, out: &mut dyn Write, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<(), EngineError> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        match self {
            PrintFormat::Table => {
                if rows == 0 {
                    let empty = RecordBatch::new_empty(schema.clone());
                    writeln!(out, "{}", pretty_format_batches(&[empty])?)?;
                } else {
                    writeln!(out, "{}", pretty_format_batches(batches)?)?;
                }
                writeln!(out, "{rows} row{}", if rows == 1 { "" } else { "s" })?;
            }
            PrintFormat::Csv => {
                let mut writer = datafusion::arrow::csv::WriterBuilder::new().with_header(true).build(&mut *out);
                if rows == 0 {
                    writer.write(&RecordBatch::new_empty(schema.clone()))?;
                }
                for batch in batches {
                    writer.write(batch)?;
                }
            }
            PrintFormat::Json => {
                let mut writer = datafusion::arrow::json::ArrayWriter::new(&mut *out);
                for batch in batches {
                    writer.write(batch)?;
                }
                writer.finish()?;
                writeln!(out)?;
            }
            PrintFormat::Ndjson => {
                let mut writer = datafusion::arrow::json::LineDelimitedWriter::new(&mut *out);
                for batch in batches {
                    writer.write(batch)?;
                }
                writer.finish()?;
            }
        }
        Ok(())
    }
}
