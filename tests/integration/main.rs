//! Integration tests, compiled into one binary.

mod common;
mod export;
mod generate;
mod import;
mod nats_server;
mod normalize;
mod redaction;
mod sql_cli;
