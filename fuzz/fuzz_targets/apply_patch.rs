//! `apply_patch`: a unified diff written by a model, applied to a file's text.
//! Input: `before\0patch`.
#![no_main]

#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::apply_patch(data));
