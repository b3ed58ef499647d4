//! Integration tests, compiled into one binary.

mod analyze;
mod chains;
mod common;
mod export;
mod generate;
mod import;
mod languages;
mod nats_server;
mod normalize;
mod redaction;
mod signals;
mod sql_cli;
mod trace;
