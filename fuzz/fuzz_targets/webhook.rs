//! The webhook's untrusted input: the signature header checked against the raw body, then the
//! event header and body parsed. Input: `event\nsignature\nbody`.
#![no_main]

#[allow(dead_code)]
#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::webhook(data));
