//! Loading sources into the lake: files of events (`import`), a JetStream stream
//! (`export`), the groups of OTLP requests `collect` receives, and files of session
//! outcomes. Each decodes its source ([`crate::ingest`]), writes the lake's files and
//! commits them ([`crate::lake`]) exactly once.

pub mod collect;
pub mod decode;
pub mod export;
pub mod import;
pub mod outcomes;
