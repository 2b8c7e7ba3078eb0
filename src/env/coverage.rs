//! The coverage command each ecosystem gets by default, for `acceptance.coverage`: it runs the
//! tests under the ecosystem's coverage tool and writes LCOV or a Go cover profile into
//! [`COVERAGE_DIR`], which `crate::gates::acceptance` reads. A tool that is not there makes the
//! command fail with a line saying what to install, and the criterion says it was not measured.

use crate::config::repo::COVERAGE_DIR as DIR;

/// Rust: cargo-llvm-cov or cargo-tarpaulin where installed, else rustc's own instrumentation
/// (`-C instrument-coverage`) read with LLVM's `llvm-profdata` and `llvm-cov` (the runner
/// image has them), into a target directory of its own.
pub fn rust(all: &str) -> String {
    let p = "/tmp/vibeloop-profraw";
    let builtin = format!(
        "rm -rf {p} && mkdir -p {p} && \
         RUSTFLAGS='-C instrument-coverage' LLVM_PROFILE_FILE='{p}/%p-%m.profraw' \
         CARGO_TARGET_DIR=\"${{CARGO_TARGET_DIR:-target}}/coverage\" \
         cargo test --offline{all} --message-format=json > {p}/build.json && \
         llvm-profdata merge -sparse {p}/*.profraw -o {p}/all.profdata && \
         set -- $(sed -n 's/.*\"executable\":\"\\([^\"]*\\)\".*/\\1/p' {p}/build.json) && \
         o=\"$1\" && shift && for b in \"$@\"; do o=\"$o -object $b\"; done && \
         llvm-cov export -format=lcov -instr-profile={p}/all.profdata $o > {DIR}/rust.lcov"
    );
    format!(
        "if cargo llvm-cov --version >/dev/null 2>&1; then \
         cargo llvm-cov --offline{all} --lcov --output-path {DIR}/rust.lcov; \
         elif cargo tarpaulin --version >/dev/null 2>&1; then \
         cargo tarpaulin --offline{all} --out Lcov --output-dir {DIR}; \
         elif command -v llvm-profdata >/dev/null && command -v llvm-cov >/dev/null; then {builtin}; \
         else echo 'no Rust coverage tool here: install cargo-llvm-cov or cargo-tarpaulin, or LLVM (llvm-profdata, llvm-cov), in the image' >&2; exit 3; fi"
    )
}

/// Python: coverage.py around pytest (its data file kept out of the worktree).
pub fn python() -> String {
    let data = "COVERAGE_FILE=/tmp/vibeloop.coverage";
    format!(
        "{data} python -m coverage run -m pytest -q -p no:cacheprovider && \
         {data} python -m coverage lcov -q -o {DIR}/python.lcov"
    )
}

/// What Python's setup adds when coverage is measured: coverage.py, unless the project's own
/// dependencies bring it.
pub fn python_setup() -> String {
    "(python -c 'import coverage' 2>/dev/null || pip install --quiet coverage)".into()
}

/// Go: the test run's own cover profile.
pub fn go() -> String {
    format!("go test -coverprofile={DIR}/go.out ./...")
}

/// Node: c8 around the test script, or Jest's or Vitest's own coverage, when the project has
/// the tool; `None` otherwise.
pub fn node(test: Option<&str>, has: impl Fn(&str) -> bool) -> Option<String> {
    let lcov = "--reporter=lcovonly";
    if has("c8") {
        test.map(|t| format!("npx --no-install c8 {lcov} --report-dir={DIR} {t}"))
    } else if has("jest") {
        Some(format!(
            "npx --no-install jest --coverage --coverageReporters=lcovonly --coverageDirectory={DIR}"
        ))
    } else if has("@vitest/coverage-v8") {
        Some(format!(
            "npx --no-install vitest run --coverage.enabled --coverage.reporter=lcovonly --coverage.reportsDirectory={DIR}"
        ))
    } else {
        None
    }
}
