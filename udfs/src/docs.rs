//! The documentation of tracelake's functions, as DataFusion shows it (`SHOW FUNCTIONS`,
//! `tracelake functions`): every function of this crate is in [`SECTION`].

use datafusion::logical_expr::{DocSection, Documentation};

/// The section every tracelake function is documented in.
pub const SECTION: DocSection =
    DocSection { include: true, label: "tracelake", description: Some("Functions for agent traces, from tracelake") };

pub(crate) fn doc(description: &str, syntax: &str, arguments: &[(&str, &str)]) -> Documentation {
    let mut builder = Documentation::builder(SECTION, description.to_owned(), syntax.to_owned());
    for (name, text) in arguments {
        builder = builder.with_argument(*name, *text);
    }
    builder.build()
}

/// Whether `doc` documents a function of this crate.
pub fn is_ours(doc: &Documentation) -> bool {
    doc.doc_section.label == SECTION.label
}
