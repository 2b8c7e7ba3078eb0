//! Every gate-output parser (pytest, unittest, linters, cargo's JSON, the generic fallback),
//! the test-result readers (every runner's summary, JUnit XML) and the baseline's diagnosis,
//! on output that a repository's own commands print. The first byte picks the gate.
#![no_main]

#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::gate_output(data));
