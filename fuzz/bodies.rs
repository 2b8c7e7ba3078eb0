//! What each fuzz target does with its input, shared by the cargo-fuzz targets
//! (`fuzz_targets/`) and the test suite's replay of the seeds (`tests/github/fuzz_replay.rs`):
//! each calls a parser of untrusted input and asserts what must hold of its answer.

use secrecy::SecretString;

/// What a target does with one input.
pub type Body = fn(&[u8]);

/// Every target: its name (its directory under `seeds/`) and its body.
pub const TARGETS: [(&str, Body); 5] = [
    ("webhook", webhook),
    ("slash_commands", slash_commands),
    ("hive_yml", hive_yml),
    ("apply_patch", apply_patch),
    ("gate_output", gate_output),
];

/// The webhook's untrusted input: the signature header checked against the raw body, then the
/// event header and body parsed. Input: `event\nsignature\nbody`.
pub fn webhook(data: &[u8]) {
    let mut parts = data.splitn(3, |b| *b == b'\n');
    let event = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let signature = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let body = parts.next().unwrap_or_default();
    let secrets = [SecretString::from("fuzz-secret".to_owned())];
    let _ = vibeloop::webhook::signature::verify(&secrets, &signature, body);
    let _ = vibeloop::webhook::event::parse(&event, body);
}

/// `/hive` commands in comment bodies (hostile text): the parser and the edit diff.
pub fn slash_commands(data: &[u8]) {
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
}

/// `.github/hive.yml`, written by anyone who can push to the repository.
pub fn hive_yml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = vibeloop::config::repo::HiveConfig::parse(&text);
}

/// `apply_patch`: a unified diff written by a model, applied to a file's text.
/// Input: `before\0patch`.
pub fn apply_patch(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (before, patch) = text.split_once('\0').unwrap_or(("", &text));
    let _ = vibeloop::agent::tools::patch_text(before, patch);
}

/// Every gate-output parser (pytest, unittest, linters, cargo's JSON, the generic fallback),
/// the test-result readers (every runner's summary, JUnit XML) and the baseline's diagnosis,
/// on output that a repository's own commands print. The first byte picks the gate.
pub fn gate_output(data: &[u8]) {
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let gates = ["test", "lint", "typecheck", "build", "security", "other"];
    let gate = gates[*pick as usize % gates.len()];
    let output = String::from_utf8_lossy(rest);
    for a in vibeloop::gates::annotate::parse(gate, &output, &["/work", "/tmp/x"]) {
        assert!(a.start_line <= a.end_line, "{a:?}");
    }
    use vibeloop::gates::test_results::TestRun;
    if let Some(run) = TestRun::read(&output).or_else(|| TestRun::read_junit(&output)) {
        let c = run.counts;
        assert!(c.total() >= c.failed, "{c:?}");
    }
    assert!(vibeloop::gates::baseline::diagnose(&output).chars().count() <= 301);
}
