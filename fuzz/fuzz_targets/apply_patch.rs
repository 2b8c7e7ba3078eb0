//! `apply_patch`: a unified diff written by a model, applied to a file's text.
//! Input: `before\0patch`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (before, patch) = text.split_once('\0').unwrap_or(("", &text));
    let _ = vibeloop::agent::tools::patch_text(before, patch);
});
