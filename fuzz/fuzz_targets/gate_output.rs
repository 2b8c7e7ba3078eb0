//! Every gate-output parser (pytest, unittest, linters, cargo's JSON, the generic fallback),
//! the test-result readers (every runner's summary, JUnit XML) and the baseline's diagnosis,
//! on output that a repository's own commands print. The first byte picks the gate.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let gates = ["test", "lint", "typecheck", "build", "security", "other"];
    let gate = gates[*pick as usize % gates.len()];
    let output = String::from_utf8_lossy(rest);
    for a in vibeloop::gates::parsers::parse(gate, &output, &["/work", "/tmp/x"]) {
        assert!(a.start_line <= a.end_line, "{a:?}");
    }
    use vibeloop::gates::results::TestRun;
    if let Some(run) = TestRun::read(&output).or_else(|| TestRun::read_junit(&output)) {
        let c = run.counts;
        assert!(c.total() >= c.failed, "{c:?}");
    }
    assert!(vibeloop::gates::baseline::diagnose(&output).chars().count() <= 301);
});
