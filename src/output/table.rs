//! Generated outputs as rows of the `outputs` table.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};

use super::GeneratedOutput;
use crate::lake::schema::OUTPUTS_SCHEMA;

pub fn outputs_batch(outputs: &[GeneratedOutput], run_id: &str, at_ms: i64) -> Result<RecordBatch, datafusion::arrow::error::ArrowError> {
    let text =
        |f: &dyn Fn(&GeneratedOutput) -> String| -> ArrayRef { Arc::new(outputs.iter().map(|o| Some(f(o))).collect::<StringArray>()) };
    RecordBatch::try_new(
        OUTPUTS_SCHEMA.clone(),
        vec![
            text(&|o| o.id.clone()),
            text(&|_| run_id.to_owned()),
            text(&|o| o.output_type.as_str().to_owned()),
            text(&|o| o.content.clone()),
            text(&|o| o.signal.clone()),
            text(&|o| o.agents.join(",")),
            text(&|o| serde_json::to_string(&o.source_findings).expect("ids serialize")),
            Arc::new(Int64Array::from_iter_values(outputs.iter().map(|o| o.observation_count as i64))),
            Arc::new(Float64Array::from_iter_values(outputs.iter().map(|o| o.confidence))),
            Arc::new(TimestampMillisecondArray::from_iter_values(outputs.iter().map(|_| at_ms)).with_timezone("UTC")),
        ],
    )
}
