//! DataFusion user-defined functions for agent-trace analysis.
//!
//! One function per file: a struct implementing `ScalarUDFImpl`, or for a window function
//! a `PartitionEvaluator` with a `udf()` that names it (`window_function`); [`register_all`]
//! adds them all to a `SessionContext`, so they work in any DataFusion context.

pub mod amounts;
pub mod chain_id;
pub mod chain_position;
pub mod charges;
pub mod clip;
pub mod cortex;
pub mod cortex_functions;
pub mod dedup_key;
mod digest;
pub mod docs;
pub mod doom_loop;
pub mod fail_fingerprint;
pub mod first_in_window;
pub mod group_row_number;
mod json;
pub mod json_object;
pub mod key_hash;
pub mod language;
pub mod patterns;
pub mod redact;
mod same_keys;
pub mod similarity;
pub mod size_capped;
pub mod sort_key;
mod strings;
pub mod superseded;
pub mod text_category;
pub mod thread_of;
pub mod tool_call_since_user;
pub mod ungrounded_value;
pub mod unquoted;
pub mod unrecovered_failure;
pub mod unstated_action;
mod values;
mod window_function;

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

pub use chain_id::ChainIdUdf;
pub use patterns::{Category, PatternError, Patterns};
pub use redact::{RedactUdf, Redactor, RedactorError};

/// Whether `function` reads a text through patterns, at a cost per byte far above a
/// comparison's: the signal categories' tests (`is_*`), the cortex's, `amounts`,
/// `charges`, `redact`, `language`, and DataFusion's regular expressions (`regexp_*`).
pub fn scans_text(function: &str) -> bool {
    function.starts_with("regexp_")
        || matches!(function, "amounts" | "charges" | "redact" | "language")
        || function.strip_prefix("is_").is_some_and(|key| Category::ALL.iter().any(|c| c.key() == key))
        || cortex_functions::names().any(|name| name == function)
}

/// Registers every tracelake UDF. `redactor` carries the built-in and the user's redaction
/// patterns, `patterns` the chosen language packs.
pub fn register_all(ctx: &SessionContext, redactor: Redactor, patterns: Arc<Patterns>) {
    ctx.register_udf(ScalarUDF::from(RedactUdf::new(redactor)));
    ctx.register_udf(ScalarUDF::from(ChainIdUdf::new()));
    ctx.register_udf(ScalarUDF::from(amounts::AmountsUdf::new()));
    ctx.register_udf(ScalarUDF::from(charges::ChargesUdf::new(Arc::clone(&patterns))));
    ctx.register_udf(ScalarUDF::from(clip::ClipUdf::new()));
    ctx.register_udf(ScalarUDF::from(unquoted::UnquotedUdf::new()));
    ctx.register_udf(ScalarUDF::from(fail_fingerprint::FailFingerprintUdf::new()));
    ctx.register_udf(ScalarUDF::from(json_object::JsonObjectUdf::new()));
    ctx.register_udf(ScalarUDF::from(key_hash::KeyHashUdf::new()));
    ctx.register_udf(ScalarUDF::from(language::LanguageUdf::new()));
    ctx.register_udf(ScalarUDF::from(dedup_key::DedupKeyUdf::new()));
    ctx.register_udf(ScalarUDF::from(sort_key::SortKeyUdf::new()));
    ctx.register_udf(ScalarUDF::from(similarity::PairSimilarityUdf::levenshtein_ratio()));
    ctx.register_udf(ScalarUDF::from(similarity::PairSimilarityUdf::param_similarity()));
    for udf in text_category::TextCategoryUdf::all(&patterns) {
        ctx.register_udf(ScalarUDF::from(udf));
    }
    for udf in cortex_functions::udfs(&patterns) {
        ctx.register_udf(udf);
    }
    ctx.register_udwf(superseded::udf());
    ctx.register_udwf(chain_position::udf());
    ctx.register_udwf(doom_loop::udf());
    ctx.register_udwf(unrecovered_failure::udf());
    ctx.register_udwf(ungrounded_value::udf());
    ctx.register_udwf(unstated_action::udf());
    ctx.register_udwf(tool_call_since_user::udf());
    ctx.register_udwf(group_row_number::udf());
    ctx.register_udwf(thread_of::udf());
    ctx.register_udwf(first_in_window::udf());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_test_registered_scans_text_and_nothing_else_does() {
        let ctx = SessionContext::new();
        register_all(&ctx, Redactor::builtin(), Arc::new(Patterns::default_languages()));
        let names = ctx.state().scalar_functions().keys().cloned().collect::<Vec<_>>();
        for name in names.iter().filter(|n| n.starts_with("is_") || cortex_functions::names().any(|c| c == n.as_str())) {
            assert!(scans_text(name), "{name}");
        }
        for name in ["amounts", "charges", "redact", "language", "regexp_like"] {
            assert!(scans_text(name) && (name.starts_with("regexp_") || names.iter().any(|n| n == name)), "{name}");
        }
        for name in ["key_hash", "chain_id", "clip", "lower", "is_anything"] {
            assert!(!scans_text(name), "{name}");
        }
    }
}
