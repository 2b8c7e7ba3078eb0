//! `/hive` commands in comment bodies (hostile text): the parser and the edit diff.
#![no_main]

#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::slash_commands(data));
