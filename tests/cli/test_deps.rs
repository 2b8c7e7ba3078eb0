//! `scripts/test-deps`, the test command's set-up, on a machine that has none of what the suite
//! needs: a fresh Debian container (the sandbox image: Python, no Rust, no browser, no
//! PostgreSQL, no Docker), without network. As a user who may not install anything it lists
//! what is missing with the one command that installs it and stops; as root with `--dry-run` it
//! says what it would install. Either way nothing is built.

use std::path::Path;
use std::process::Command;

/// Runs `scripts/test-deps args` in a fresh container as `user`; `(exit code, output)`.
fn test_deps(user: &str, args: &[&str]) -> (i32, String) {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let out = Command::new("docker")
        .args(["run", "--rm", "--network", "none", "--user", user])
        .arg("-v")
        .arg(format!("{}:/src/scripts:ro", scripts.display()))
        .args(["vibeloop-runner:python", "bash", "/src/scripts/test-deps"])
        .args(args)
        .output()
        .expect("docker runs (scripts/test installs it)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn without_root_it_names_what_is_missing_and_the_command_that_installs_it() {
    let (code, out) = test_deps("1000:1000", &[]);
    assert_eq!(code, 1, "{out}");
    for missing in [
        "missing: chromium and chromedriver",
        "missing: PostgreSQL's server",
        "missing: a Docker engine",
        "needs a Rust toolchain (cargo, rustc >= 1.85): install it with rustup",
        "cannot install them: not root, and sudo asks for a password",
        "the tests were not started",
    ] {
        assert!(out.contains(missing), "{missing:?} not said:\n{out}");
    }
    // One line with every package, in a form that can be pasted.
    let line = out
        .lines()
        .find(|l| l.contains("install the packages with: sudo apt-get install -y"))
        .unwrap_or_else(|| panic!("no install line:\n{out}"));
    for pkg in [
        "chromium",
        "chromium-driver",
        "postgresql",
        "docker.io",
        "docker-compose",
    ] {
        assert!(
            line.split_whitespace().any(|w| w == pkg),
            "{pkg} not in {line}"
        );
    }
    assert!(!out.contains("installing"), "{out}");
}

#[test]
fn as_root_a_dry_run_says_what_it_would_install_and_installs_nothing() {
    let (code, out) = test_deps("0:0", &["--dry-run"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("would install or set up what is listed above"),
        "{out}"
    );
    assert!(out.contains("chromium chromium-driver"), "{out}");
    assert!(!out.contains("test-deps: installing"), "{out}");
    let (code, out) = test_deps("0:0", &["--bogus"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("unknown argument '--bogus'"), "{out}");
}
