//! Integration tests, compiled into one binary.

mod act;
mod analyze;
mod chains;
mod classify;
mod common;
mod damage;
mod demo;
mod export;
mod fuzz;
mod generate;
mod hostile_input;
mod import;
mod languages;
mod layers;
mod llm_server;
mod nats_server;
mod normalize;
mod outputs;
mod redaction;
mod report;
mod score;
mod secrets;
mod signals;
mod sql_cli;
mod trace;
mod watch;
