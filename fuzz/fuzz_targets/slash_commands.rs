//! `/hive` commands in comment bodies (hostile text): the parser and the edit diff.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let found = vibeloop::commands::parse(&text);
    // Every command found is on a line of the body.
    let lines = 1 + text.matches('\n').count() + text.matches('\r').count();
    for f in &found {
        assert!(f.line >= 1 && f.line <= lines, "line {} of {lines}", f.line);
    }
    let mid = (0..=text.len() / 2)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let (old, new) = text.split_at(mid);
    let _ = vibeloop::commands::new_commands(old, new);
});
