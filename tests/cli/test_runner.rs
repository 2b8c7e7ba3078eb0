//! `scripts/test-runner`, the runner `scripts/test` gives cargo for the test binaries: a binary
//! `scripts/test` started early, beside the others, is not run again where cargo runs it — that
//! run's output and exit code are handed on, after waiting for it, and a run that ended without
//! an exit code is a failure that says so. Any other binary runs as it is.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A stub test binary in `dir` that says it ran, with its arguments.
fn stub(dir: &Path) -> PathBuf {
    let bin = dir.join("faults-stub");
    std::fs::write(&bin, "#!/bin/sh\necho \"the binary ran: $*\"\n").unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// A stub binary and the directory of its early run, whose process is `pid`; the runner's
/// `VIBELOOP_TEST_EARLY` for them.
fn early_run(dir: &Path, pid: u32) -> (PathBuf, PathBuf, String) {
    let bin = stub(dir);
    let early = dir.join("early");
    std::fs::create_dir(&early).unwrap();
    std::fs::write(early.join("pid"), pid.to_string()).unwrap();
    let told = format!("{}:{}", bin.display(), early.display());
    (bin, early, told)
}

/// `scripts/test-runner bin`, told that `early` names a run started early (`bin:dir`).
fn runner(bin: &Path, early: &str) -> Child {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test-runner"))
        .arg(bin)
        .env("VIBELOOP_TEST_EARLY", early)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The runner's output once it ended, within a deadline.
fn finished(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the runner was still waiting after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn an_early_run_is_waited_for_and_its_output_and_exit_code_handed_on() {
    let dir = tempfile::tempdir().unwrap();
    // The early run, still going.
    let mut running = Command::new("sleep").arg("60").spawn().unwrap();
    let (bin, early, told) = early_run(dir.path(), running.id());
    let child = runner(&bin, &told);
    // It ends, failing; the runner hands that on.
    std::fs::write(early.join("log"), "test loss::x ... FAILED\n").unwrap();
    std::fs::write(early.join("rc"), "101\n").unwrap();
    let out = finished(child);
    let _ = running.kill();
    let _ = running.wait();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(101), "{all}");
    assert!(all.contains("test loss::x ... FAILED"), "{all}");
    assert!(!all.contains("the binary ran"), "{all}");
}

#[test]
fn an_early_run_that_ended_without_an_exit_code_fails_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let (bin, early, told) = early_run(dir.path(), gone.id());
    std::fs::write(early.join("log"), "running 8 tests\n").unwrap();
    let out = finished(runner(&bin, &told));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("running 8 tests"), "{all}");
    assert!(all.contains("ended without an exit code"), "{all}");
    assert!(!all.contains("the binary ran"), "{all}");
}

#[test]
fn another_binary_runs_as_it_is_with_each_tests_time_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let bin = stub(dir.path());
    let out = finished(runner(&bin, "/elsewhere/faults-0123:/nowhere"));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("the binary ran: -Z unstable-options --report-time"),
        "{all}"
    );
}
