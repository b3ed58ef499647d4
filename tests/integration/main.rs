//! Integration tests, compiled into one binary.

mod analyze;
mod common;
mod export;
mod generate;
mod import;
mod nats_server;
mod normalize;
mod redaction;
mod signals;
mod sql_cli;
mod trace;
