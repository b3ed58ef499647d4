//! DataFusion user-defined functions for agent-trace analysis.
//!
//! Every function is a struct implementing `ScalarUDFImpl`, one per file; [`register_all`]
//! adds them all to a `SessionContext`, so they work in any DataFusion context.

pub mod chain_id;
mod strings;
pub mod redact;

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

pub use chain_id::ChainIdUdf;
pub use redact::{RedactUdf, Redactor, RedactorError};

/// Registers every tracelake UDF. `redactor` carries the built-in and the user's patterns.
pub fn register_all(ctx: &SessionContext, redactor: Redactor) {
    ctx.register_udf(ScalarUDF::from(RedactUdf::new(redactor)));
    ctx.register_udf(ScalarUDF::from(ChainIdUdf::new()));
}
