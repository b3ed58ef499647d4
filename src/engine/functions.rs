//! tracelake's SQL functions and their documentation, for `tracelake functions`.

use datafusion::prelude::SessionContext;
use serde::Serialize;
use tracelake_udfs::docs::is_ours;

use super::EngineOptions;

/// One documented function.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionDoc {
    pub name: String,
    /// `scalar` or `window`.
    pub kind: &'static str,
    pub syntax: String,
    pub description: String,
    /// (argument, what it is).
    pub arguments: Vec<(String, String)>,
}

/// Every function tracelake adds to DataFusion's, sorted by name.
pub fn tracelake_functions(opts: &EngineOptions) -> Vec<FunctionDoc> {
    let ctx = SessionContext::new();
    tracelake_udfs::register_all(&ctx, crate::redact::Redactor::builtin(), opts.patterns.clone());
    let state = ctx.state();
    let doc = |name: &str, kind, doc: Option<&datafusion::logical_expr::Documentation>| {
        doc.filter(|d| is_ours(d)).map(|d| FunctionDoc {
            name: name.to_owned(),
            kind,
            syntax: d.syntax_example.clone(),
            description: d.description.clone(),
            arguments: d.arguments.clone().unwrap_or_default(),
        })
    };
    let mut functions: Vec<FunctionDoc> = state
        .scalar_functions()
        .iter()
        .filter_map(|(name, f)| doc(name, "scalar", f.documentation()))
        .chain(state.window_functions().iter().filter_map(|(name, f)| doc(name, "window", f.documentation())))
        .collect();
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    functions
}
