//! Integration tests, compiled into one binary.

mod common;
mod generate;
mod import;
mod normalize;
mod redaction;
mod sql_cli;
