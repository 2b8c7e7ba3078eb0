//! The sandboxes with real containers (and real processes for the local backend): isolation,
//! limits, timeouts, output caps, a clean environment, and clean-up after a crash.
//! Needs a Docker engine and the runner image (`docker/build-runner-image.sh`).

use std::path::Path;
use std::time::Duration;

use vibeloop::sandbox::{Backend, Kind, Sandbox, SandboxSpec};

pub(crate) fn spec(worktree: &Path, read_only: &[&str]) -> SandboxSpec {
    SandboxSpec {
        repo: "acme/widgets".into(),
        ticket: "T-1".into(),
        role: format!("test-{:x}", rand::random::<u32>()),
        worktree: worktree.to_owned(),
        read_only: read_only.iter().map(|s| s.to_string()).collect(),
        locked: vec![],
        image: "vibeloop-runner:python".into(),
        network: false,
        cpus: 1.0,
        memory_mb: 256,
        pids: 256,
        disk_mb: 1024,
        cache: None,
        cache_writable: false,
        ca_bundle: None,
        env: vec![],
        prepare: None,
    }
}

pub(crate) async fn docker(data: &Path) -> Backend {
    let (backend, _) = Backend::detect(data, Some(Kind::Docker))
        .await
        .expect("a Docker engine answers (the sandbox tests need one)");
    backend
}

pub(crate) async fn started(backend: &Backend, spec: &SandboxSpec) -> Started {
    Started(Some(
        backend.start(spec).await.unwrap_or_else(|e| panic!("{e}")),
    ))
}

/// A started sandbox whose container goes when the test ends, passing or failing: a failed
/// assertion must not leave a command running (one left writing once filled the host's disk).
pub(crate) struct Started(Option<Sandbox>);

impl Started {
    pub(crate) async fn stop(mut self) {
        if let Some(sb) = self.0.take() {
            sb.stop().await;
        }
    }
}

impl std::ops::Deref for Started {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        self.0.as_ref().expect("not stopped")
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(name) = self.0.as_ref().and_then(|sb| sb.docker()).map(|d| d.name()) {
            let _ = std::process::Command::new("docker")
                .args(["rm", "-f", name])
                .output();
        }
    }
}

pub(crate) fn worktree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("spec")).unwrap();
    std::fs::write(dir.path().join("spec/contract.txt"), "frozen\n").unwrap();
    std::fs::write(dir.path().join("main.py"), "print('hi')\n").unwrap();
    dir
}

#[tokio::test]
async fn commands_run_in_the_worktree_as_a_non_root_user_without_network() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &[])).await;
    let out = sb
        .exec(
            "python3 main.py && id -u && ls /sys/class/net",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert!(out.success(), "{}", out.output);
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(lines[0], "hi");
    assert_ne!(lines[1], "0", "commands run as root");
    assert_eq!(&lines[2..], ["lo"], "a network interface besides loopback");
    // Reaching anything outside fails: the engine's own bridge address, say.
    let net = sb
        .exec(
            "python3 -c \"import socket; socket.create_connection(('172.17.0.1', 2375), 3)\"",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert!(!net.success());
    assert!(
        net.output.contains("Network is unreachable") || net.output.contains("OSError"),
        "{}",
        net.output
    );
    // What the command writes lands in the worktree.
    assert!(
        sb.exec("echo made > made.txt", Duration::from_secs(30))
            .await
            .unwrap()
            .success()
    );
    assert_eq!(
        std::fs::read_to_string(wt.path().join("made.txt")).unwrap(),
        "made\n"
    );
    sb.stop().await;
}

/// Lines a command writes in turn to stdout and stderr are read in the order written (a test
/// runner's `Running <target>` on stderr and that target's results on stdout must not swap).
#[tokio::test]
async fn output_to_stdout_and_stderr_keeps_the_order_it_was_written_in() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &[])).await;
    let out = sb
        .exec(
            "i=0; while [ $i -lt 300 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    sb.stop().await;
    let want: String = (0..300).map(|i| format!("out {i}\nerr {i}\n")).collect();
    assert!(out.success(), "{}", out.output);
    assert_eq!(out.output, want);
}

#[tokio::test]
async fn read_only_paths_cannot_be_written() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &["spec/", "absent/"])).await;
    for cmd in [
        "echo changed > spec/contract.txt",
        "touch spec/new.txt",
        "rm spec/contract.txt",
        "mv spec/contract.txt x.txt",
    ] {
        let out = sb.exec(cmd, Duration::from_secs(30)).await.unwrap();
        assert!(!out.success(), "{cmd} succeeded");
        assert!(
            out.output.contains("Read-only file system"),
            "{cmd}: {}",
            out.output
        );
    }
    assert_eq!(
        std::fs::read_to_string(wt.path().join("spec/contract.txt")).unwrap(),
        "frozen\n"
    );
    assert!(
        sb.exec("echo ok > main.py", Duration::from_secs(30))
            .await
            .unwrap()
            .success()
    );
    sb.stop().await;
}

#[tokio::test]
async fn mounts_through_symbolic_links_are_refused() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    std::os::unix::fs::symlink("/etc", wt.path().join("docs")).unwrap();
    let backend = docker(data.path()).await;
    let err = backend
        .start(&spec(wt.path(), &["docs/"]))
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

#[tokio::test]
async fn a_memory_hog_is_killed_and_reported_out_of_memory() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &[])).await;
    let out = sb
        .exec(
            "python3 -c 'x = bytearray(600 * 1024 * 1024); print(len(x))'",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(out.oom_killed, "{out:?}");
    assert!(!out.timed_out);
    assert_eq!(out.describe(), "killed: out of memory");
    // The sandbox lives on; the next command is not mistaken for another OOM.
    let next = sb.exec("true", Duration::from_secs(30)).await.unwrap();
    assert!(next.success() && !next.oom_killed);
    sb.stop().await;
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_with_its_children() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    for kind in [Kind::Docker, Kind::Local] {
        let (backend, _) = Backend::detect(data.path(), Some(kind)).await.unwrap();
        let sb = started(&backend, &spec(wt.path(), &[])).await;
        let out = sb
            .exec(
                "(sleep 120; echo late > late.txt) & sleep 120",
                Duration::from_secs(2),
            )
            .await
            .unwrap();
        assert!(out.timed_out, "{kind:?}: {out:?}");
        assert!(
            out.duration < Duration::from_secs(20),
            "{kind:?}: {:?}",
            out.duration
        );
        assert_eq!(out.describe(), "timed out after 2 s");
        // Nothing of the command is left running in the container (the local backend's
        // process-group kill has its own test in src/sandbox/local.rs).
        if kind == Kind::Docker {
            let ps = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";
            let ps = sb.exec(ps, Duration::from_secs(30)).await.unwrap();
            assert!(ps.output.contains("sleep infinity"), "{}", ps.output);
            assert!(!ps.output.contains("sleep 120"), "{}", ps.output);
        }
        sb.stop().await;
    }
}

#[tokio::test]
async fn output_over_the_cap_is_cut_with_a_note() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    for kind in [Kind::Docker, Kind::Local] {
        let (backend, _) = Backend::detect(data.path(), Some(kind)).await.unwrap();
        let sb = started(&backend, &spec(wt.path(), &[])).await;
        let out = sb
            .exec_capped("seq 1 200000; echo END", Duration::from_secs(30), 4096)
            .await
            .unwrap();
        assert!(out.success());
        assert!(out.output.starts_with("1\n2\n3\n"), "{kind:?}");
        assert!(out.output.contains("bytes of output cut"), "{kind:?}");
        assert!(out.output.ends_with("200000\nEND\n"), "{kind:?}");
        assert!(out.output.len() < 4200);
        sb.stop().await;
    }
}

#[tokio::test]
async fn nothing_of_the_bots_environment_reaches_a_sandbox() {
    // SAFETY: only this test reads this variable.
    unsafe { std::env::set_var("GITHUB_TOKEN_FOR_SANDBOX_TEST", "ghs_must_not_leak") };
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    for kind in [Kind::Docker, Kind::Local] {
        let (backend, _) = Backend::detect(data.path(), Some(kind)).await.unwrap();
        let sb = started(&backend, &spec(wt.path(), &[])).await;
        let out = sb.exec("env", Duration::from_secs(30)).await.unwrap();
        assert!(out.success());
        assert!(
            !out.output.contains("ghs_must_not_leak"),
            "{kind:?}: {}",
            out.output
        );
        assert!(!out.output.contains("CARGO"), "{kind:?}: {}", out.output);
        sb.stop().await;
    }
}

#[tokio::test]
async fn containers_left_by_a_crash_are_removed_at_the_next_start() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &[])).await;
    let d = sb.docker().expect("a Docker sandbox");
    let name = d.name().to_owned();
    std::mem::forget(sb); // as if the bot died without cleaning up
    let Backend::Docker(again) = docker(data.path()).await else {
        unreachable!()
    };
    assert!(
        again
            .containers()
            .await
            .unwrap()
            .iter()
            .any(|(_, n)| *n == name)
    );
    assert!(again.remove_leftovers().await.unwrap() >= 1);
    assert!(again.containers().await.unwrap().is_empty());
    // Another data directory is another instance: its containers are not touched.
    let other = tempfile::tempdir().unwrap();
    let Backend::Docker(stranger) = docker(other.path()).await else {
        unreachable!()
    };
    let theirs = started(&Backend::Docker(stranger.clone()), &spec(wt.path(), &[])).await;
    assert_eq!(again.remove_leftovers().await.unwrap(), 0);
    assert_eq!(stranger.containers().await.unwrap().len(), 1);
    theirs.stop().await;
}

#[tokio::test]
async fn a_missing_image_says_how_to_build_it() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let mut s = spec(wt.path(), &[]);
    s.image = "vibeloop-runner:does-not-exist".into();
    let err = backend.start(&s).await.err().expect("refused");
    assert!(err.to_string().contains("build-runner-image.sh"), "{err}");
}

/// Bytes free on the file system of `path`.
#[tokio::test]
async fn a_fork_bomb_meets_the_pids_limit_and_leaves_nothing_behind() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let mut s = spec(wt.path(), &[]);
    s.pids = 64;
    let sb = started(&backend, &s).await;
    std::fs::write(
        wt.path().join("bomb.py"),
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    )
    .unwrap();
    let out = sb
        .exec("python3 bomb.py", Duration::from_secs(5))
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    // The cgroup holds it to 64 processes, and the kill took every one of them.
    let after = sb
        .exec(
            "cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null; \
             ls -d /proc/[0-9]* | wc -l",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert!(after.success(), "{after:?}");
    let n: Vec<u64> = after
        .output
        .lines()
        .map(|l| l.trim().parse().expect(&after.output))
        .collect();
    assert_eq!(n[0], 64, "{}", after.output);
    assert!(n[1] < 8, "processes left: {}", after.output);
    sb.stop().await;
}

#[tokio::test]
async fn a_long_runs_results_are_kept_from_all_of_its_output_and_people_see_head_and_tail() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &[])).await;
    // 20,000 tests, each with lines of its own output between: ~2.5 MB in all.
    let script = "python3 -c \"\nfor i in range(20000):\n    print(f'PASSED tests/test_a.py::test_{i}')\n    print('what the test printed ' * 4)\n\"";
    let keep: vibeloop::sandbox::Keep = |l| l.starts_with("PASSED ");
    let out = sb
        .exec_keeping(script, Duration::from_secs(60), keep)
        .await
        .unwrap();
    assert!(out.success(), "{}", out.output);
    assert!(
        out.output.len() <= 70_000,
        "{} bytes shown",
        out.output.len()
    );
    assert!(out.output.contains("bytes of output cut"));
    let kept: Vec<&str> = out.for_results().lines().collect();
    assert_eq!(kept.len(), 20_000);
    assert_eq!(kept[10_000], "PASSED tests/test_a.py::test_10000");
    // A short run is kept whole.
    let short = sb
        .exec_keeping("echo PASSED x; echo other", Duration::from_secs(30), keep)
        .await
        .unwrap();
    assert_eq!(short.for_results(), "PASSED x\nother\n");
    sb.stop().await;
}

/// Commands run beside each other at once (each waits, up to 20 s, for the other's mark), and
/// the test lock is settled once after both: what one did to a locked file is put back and
/// named in both outputs, since nothing tells which of them did it.
#[tokio::test]
async fn commands_beside_each_other_run_at_once_and_share_what_the_lock_put_back() {
    let dir = worktree();
    let data = tempfile::tempdir().unwrap();
    let backend = docker(data.path()).await;
    let mut spec = spec(dir.path(), &[]);
    spec.locked = vec!["spec".into()];
    let sb = started(&backend, &spec).await;
    let wait = |other: &str| {
        format!("for i in $(seq 200); do [ -f .m-{other} ] && exit 0; sleep 0.1; done; exit 1")
    };
    let a = format!("touch .m-a; {}", wait("b"));
    let b = format!(
        "touch .m-b; echo changed > spec/contract.txt; {}",
        wait("a")
    );
    let outs = sb
        .exec_beside(&[(&a, None), (&b, None)], Duration::from_secs(60))
        .await
        .unwrap();
    assert!(outs.iter().all(|o| o.success()), "{outs:?}");
    for out in &outs {
        assert_eq!(out.put_back, ["spec/contract.txt"], "{out:?}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("spec/contract.txt")).unwrap(),
        "frozen\n"
    );
    sb.stop().await;
}

/// A Python environment's virtual environment gets its own pip from the image's pip, its
/// `.pyc` files written or not as asked (`ensurepip` always writes them), or, in an image
/// without a pip of its own, from `ensurepip`.
#[tokio::test]
async fn a_virtual_environment_gets_its_pip_with_or_without_the_images_own() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let sb = started(&backend, &spec(wt.path(), &[])).await;
    let make = |dir: &str, compile: bool| {
        vibeloop::sandbox::quote(&vibeloop::env::detect::venv_with_pip(dir, compile))
    };
    // A python3 whose `-m pip` fails, as where Debian's python3-pip is not installed.
    let no_pip = "mkdir -p /tmp/no-pip \
        && printf '#!/bin/sh\\ncase \"$*\" in \"-m pip\"*) exit 1;; esac\\nexec /usr/bin/python3 \"$@\"\\n' > /tmp/no-pip/python3 \
        && chmod +x /tmp/no-pip/python3";
    let pyc = |dir: &str| {
        format!(
            "echo {dir}: $(ls {dir}/lib/python3*/site-packages/pip/__pycache__ 2>/dev/null | wc -l) pyc"
        )
    };
    let cmd = format!(
        "{no_pip} && sh -c {} && sh -c {} && PATH=/tmp/no-pip:$PATH sh -c {} && {} && {} \
         && /tmp/a/bin/pip --version && /tmp/b/bin/pip --version && /tmp/c/bin/pip --version",
        make("/tmp/a", false),
        make("/tmp/b", true),
        make("/tmp/c", false),
        pyc("/tmp/a"),
        pyc("/tmp/b"),
    );
    let out = sb.exec(&cmd, Duration::from_secs(120)).await.unwrap();
    assert!(out.success(), "{}", out.output);
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.output);
    assert_eq!(lines[0], "/tmp/a: 0 pyc", "ensurepip made it");
    assert_ne!(lines[1], "/tmp/b: 0 pyc", "no .pyc was written");
    for (line, venv) in lines[2..].iter().zip(["/tmp/a/", "/tmp/b/", "/tmp/c/"]) {
        assert!(
            line.starts_with("pip ") && line.contains(&format!("from {venv}lib/")),
            "{}",
            out.output
        );
    }
    sb.stop().await;
}
