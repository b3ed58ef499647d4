//! Printing query results as a table, CSV, JSON or NDJSON, batch by batch as they come, so
//! a large result never has to fit in memory.

use std::io::Write;
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::Writer as CsvWriter;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::{ArrayWriter, LineDelimitedWriter};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::arrow::util::pretty::pretty_format_batches;

use super::EngineError;
use super::fit_table::{Fitted, fit_table};

/// Rows a table shows at most unless told otherwise; the rest are counted (as
/// datafusion-cli's `--maxrows`).
pub const MAX_TABLE_ROWS: usize = 1000;

/// How query results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrintOptions {
    pub format: PrintFormat,
    /// Rows a table shows at most (`0`: all of them).
    pub max_rows: usize,
    /// Whether a table's row count says how long the query took.
    pub timing: bool,
    /// Characters a table's lines take at most, its values cut to fit (`0`: values whole).
    pub max_width: usize,
}

impl Default for PrintOptions {
    fn default() -> Self {
        Self { format: PrintFormat::Table, max_rows: MAX_TABLE_ROWS, timing: false, max_width: 0 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintFormat {
    Table,
    Csv,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("format `{0}` is not one of table, csv, json, ndjson")]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for PrintFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|f| f.as_str() == s).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

impl std::fmt::Display for PrintFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PrintFormat {
    pub const ALL: [PrintFormat; 4] = [PrintFormat::Table, PrintFormat::Csv, PrintFormat::Json, PrintFormat::Ndjson];

    /// Their names, in the same order.
    pub const NAMES: [&'static str; 4] = ["table", "csv", "json", "ndjson"];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Writes `batches` (with `schema`, for headers when there are no rows).
    pub fn write(self, out: &mut dyn Write, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<(), EngineError> {
        let options = PrintOptions { format: self, ..PrintOptions::default() };
        let mut printer = options.printer(out, schema, Instant::now());
        for batch in batches {
            printer.write(batch)?;
        }
        printer.finish()
    }
}

impl PrintOptions {
    /// A printer of one result with `schema`, fed batch by batch; a query's time counts
    /// from `started`, before its planning, as in datafusion-cli (planning a statement over
    /// the chain views can take longer than running it).
    pub fn printer<'a>(&self, out: &'a mut dyn Write, schema: &SchemaRef, started: Instant) -> Printer<'a> {
        let sink = match self.format {
            PrintFormat::Table => Sink::Table { out, shown: Vec::new(), shown_rows: 0, max_width: self.max_width },
            PrintFormat::Csv => Sink::Csv(Box::new(datafusion::arrow::csv::WriterBuilder::new().with_header(true).build(out)), false),
            PrintFormat::Json => Sink::Json(ArrayWriter::new(out)),
            PrintFormat::Ndjson => Sink::Ndjson(LineDelimitedWriter::new(out)),
        };
        let max_rows = if self.max_rows == 0 { usize::MAX } else { self.max_rows };
        let started = self.timing.then_some(started);
        Printer { schema: schema.clone(), rows: 0, max_rows, started, sink }
    }
}

pub struct Printer<'a> {
    schema: SchemaRef,
    rows: usize,
    max_rows: usize,
    started: Option<Instant>,
    sink: Sink<'a>,
}

enum Sink<'a> {
    Table {
        out: &'a mut dyn Write,
        shown: Vec<RecordBatch>,
        shown_rows: usize,
        max_width: usize,
    },
    /// The writer, and whether it has written anything (the header comes with the first batch).
    Csv(Box<CsvWriter<&'a mut dyn Write>>, bool),
    Json(ArrayWriter<&'a mut dyn Write>),
    Ndjson(LineDelimitedWriter<&'a mut dyn Write>),
}

impl Printer<'_> {
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), EngineError> {
        self.rows += batch.num_rows();
        match &mut self.sink {
            Sink::Table { shown, shown_rows, .. } => {
                let room = self.max_rows - *shown_rows;
                if room > 0 && batch.num_rows() > 0 {
                    let kept = batch.slice(0, batch.num_rows().min(room));
                    *shown_rows += kept.num_rows();
                    shown.push(kept);
                }
            }
            Sink::Csv(writer, written) => {
                writer.write(batch)?;
                *written = true;
            }
            Sink::Json(writer) => writer.write(batch)?,
            Sink::Ndjson(writer) => writer.write(batch)?,
        }
        Ok(())
    }

    pub fn finish(self) -> Result<(), EngineError> {
        let rows = self.rows;
        match self.sink {
            Sink::Table { out, mut shown, shown_rows, max_width } => {
                if shown.is_empty() {
                    shown.push(RecordBatch::new_empty(self.schema.clone()));
                }
                let mut left_out = String::new();
                if max_width == 0 {
                    writeln!(out, "{}", pretty_format_batches(&shown)?)?;
                } else {
                    let (header, values) = table_values(&self.schema, &shown)?;
                    let fitted = fit_table(&header, &values, max_width);
                    writeln!(out, "{}", fitted.text)?;
                    left_out = what_fitting_left_out(&fitted, header.len(), max_width);
                }
                let plural = if rows == 1 { "" } else { "s" };
                let time = self.started.map(|t| format!(" in {:.3} s", t.elapsed().as_secs_f64())).unwrap_or_default();
                if rows > shown_rows {
                    writeln!(
                        out,
                        "{rows} row{plural}{time} ({shown_rows} shown; --maxrows, --format csv or a LIMIT for the rest){left_out}"
                    )?;
                } else {
                    writeln!(out, "{rows} row{plural}{time}{left_out}")?;
                }
            }
            Sink::Csv(mut writer, written) => {
                if !written {
                    writer.write(&RecordBatch::new_empty(self.schema.clone()))?;
                }
            }
            Sink::Json(mut writer) => {
                writer.finish()?;
                writeln!(writer.into_inner())?;
            }
            Sink::Ndjson(mut writer) => writer.finish()?,
        }
        Ok(())
    }
}

/// The column names, and each shown row's values as text (as arrow's pretty tables print them).
fn table_values(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<(Vec<String>, Vec<Vec<String>>), EngineError> {
    let header = schema.fields().iter().map(|f| f.name().clone()).collect();
    let options = FormatOptions::default().with_display_error(true);
    let mut values = Vec::new();
    for batch in batches {
        let formatters = batch.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &options)).collect::<Result<Vec<_>, _>>()?;
        values.extend((0..batch.num_rows()).map(|row| formatters.iter().map(|f| f.value(row).to_string()).collect()));
    }
    Ok((header, values))
}

/// What a fitted table's row count adds: the columns left out and values cut, and how to see them.
fn what_fitting_left_out(fitted: &Fitted, columns: usize, width: usize) -> String {
    let mut parts = Vec::new();
    if fitted.hidden_columns > 0 {
        parts.push(format!("{} of {columns} columns left out", fitted.hidden_columns));
    }
    if fitted.cut_values > 0 {
        let plural = if fitted.cut_values == 1 { "" } else { "s" };
        parts.push(format!("{} value{plural} cut", fitted.cut_values));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(" ({} to fit {width} characters; \\maxwidth inf or --format csv for all)", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use datafusion::arrow::datatypes::Schema;

    use super::{PrintFormat, PrintOptions};

    #[test]
    fn a_query_is_timed_from_when_it_started_not_from_its_first_row() {
        let options = PrintOptions { timing: true, ..PrintOptions::default() };
        let mut out = Vec::new();
        let started = Instant::now() - Duration::from_secs(5);
        options.printer(&mut out, &Arc::new(Schema::empty()), started).finish().unwrap();
        let said = String::from_utf8(out).unwrap();
        assert!(said.contains("0 rows in 5.0"), "{said}");
    }

    #[test]
    fn formats_read_back_by_name() {
        let names: Vec<String> = PrintFormat::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["table", "csv", "json", "ndjson"]);
        for format in PrintFormat::ALL {
            assert_eq!(format.as_str().parse::<PrintFormat>(), Ok(format));
        }
        assert!("xml".parse::<PrintFormat>().unwrap_err().to_string().contains("table, csv, json, ndjson"));
    }
}
