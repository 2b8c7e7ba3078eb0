//! `.github/hive.yml`, written by anyone who can push to the repository.
#![no_main]

#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::hive_yml(data));
