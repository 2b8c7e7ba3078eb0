//! The local-process sandbox: `sh -c` in its own process group, environment cleared (nothing of
//! the bot's — tokens least of all — passes in), stdout and stderr through one pipe so they
//! interleave as printed, a timeout that kills the whole group, and rlimits on CPU time,
//! address space, file size and process count.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{CappedBuffer, CommandOutput, DEFAULT_OUTPUT_CAP};

/// Resource limits of one command; `None` leaves the limit as inherited.
#[derive(Debug, Clone, Default)]
pub struct Rlimits {
    pub cpu_seconds: Option<u64>,
    pub address_space_bytes: Option<u64>,
    pub file_size_bytes: Option<u64>,
    pub processes: Option<u64>,
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct LocalCommand {
    pub script: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub output_cap: usize,
    /// Lines of the whole output to keep beside the capped text.
    pub keep: Option<super::Keep>,
    pub limits: Rlimits,
    /// Extra environment, on top of the minimal one (PATH, HOME, LANG).
    pub env: Vec<(String, String)>,
}

impl LocalCommand {
    pub fn new(script: impl Into<String>, cwd: &Path, timeout: Duration) -> Self {
        Self {
            script: script.into(),
            cwd: cwd.to_owned(),
            timeout,
            output_cap: DEFAULT_OUTPUT_CAP,
            keep: None,
            limits: Rlimits::default(),
            env: Vec::new(),
        }
    }
}

/// The local sandbox of one worktree: commands run as local processes with the spec's limits.
/// It cannot mount paths read-only or cut the network: the security gate's test lock still
/// catches changed read-only files afterwards.
pub struct LocalSandbox {
    worktree: PathBuf,
    cache: Option<PathBuf>,
    limits: Rlimits,
    disk_mb: u64,
    env: Vec<(String, String)>,
}

impl LocalSandbox {
    pub fn new(spec: &super::SandboxSpec) -> Self {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        Self {
            worktree: spec.worktree.clone(),
            cache: spec.cache.clone(),
            limits: Rlimits {
                cpu_seconds: None,
                address_space_bytes: Some(
                    spec.memory_mb
                        .saturating_mul(1024 * 1024)
                        .max(256 * 1024 * 1024),
                ),
                file_size_bytes: Some(spec.disk_mb.saturating_mul(1 << 20)),
                // RLIMIT_NPROC counts every process of the user and does not bind root.
                processes: (!root).then_some(4096),
            },
            disk_mb: spec.disk_mb,
            env: spec.host_env(),
        }
    }

    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// What one command may write (MiB).
    pub fn disk_mb(&self) -> u64 {
        self.disk_mb
    }

    /// Where the disk guard watches its commands' writes: the worktree and the cache (a local
    /// command can write elsewhere too; the guard does not see that).
    pub fn writable(&self) -> Vec<PathBuf> {
        std::iter::once(self.worktree.clone())
            .chain(self.cache.clone())
            .collect()
    }

    /// Runs `script`; it is killed at `timeout`, or when `stop` says why it must end.
    pub async fn exec(
        &self,
        script: &str,
        timeout: Duration,
        (cap, keep): (usize, Option<super::Keep>),
        stop: impl std::future::Future<Output = String>,
    ) -> Result<CommandOutput, super::SandboxError> {
        let mut cmd = LocalCommand::new(script, &self.worktree, timeout);
        cmd.output_cap = cap;
        cmd.keep = keep;
        cmd.env = self.env.clone();
        cmd.limits = Rlimits {
            cpu_seconds: Some(timeout.as_secs() + 5),
            ..self.limits.clone()
        };
        Ok(run_until(&cmd, stop).await?)
    }
}

/// Runs `cmd` to its end or its timeout.
pub async fn run(cmd: &LocalCommand) -> std::io::Result<CommandOutput> {
    run_until(cmd, std::future::pending()).await
}

/// Runs `cmd` to its end, its timeout, or until `stop` says why it must end.
async fn run_until(
    cmd: &LocalCommand,
    stop: impl std::future::Future<Output = String>,
) -> std::io::Result<CommandOutput> {
    let (reader, writer) = std::io::pipe()?;
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&cmd.script)
        .current_dir(&cmd.cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &cmd.cwd)
        .env("LANG", "C.UTF-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true);
    let limits = cmd.limits.clone();
    // SAFETY: only async-signal-safe calls (setrlimit) run between fork and exec.
    unsafe {
        command.pre_exec(move || apply_rlimits(&limits));
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    // The command's own copies of the pipe's write end are in the child; ours went with
    // `command`, so the reader sees EOF once every process of the group is gone.
    drop(command);
    let pgid = child.id().map(|id| id as i32);
    let (cap, keep) = (cmd.output_cap, cmd.keep);
    let collector = tokio::task::spawn_blocking(move || {
        let mut reader = reader;
        let mut buf = CappedBuffer::keeping(cap, keep);
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.push(&chunk[..n]),
            }
        }
        buf
    });
    let (status, timed_out, killed) = tokio::select! {
        waited = tokio::time::timeout(cmd.timeout, child.wait()) => match waited {
            Ok(status) => (Some(status?), false, None),
            Err(_) => (None, true, None),
        },
        why = stop => (None, false, Some(why)),
    };
    // Whatever the shell left behind (background jobs, a stuck child) goes with the group.
    if let Some(pgid) = pgid {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
    if status.is_none() {
        let _ = child.wait().await;
    }
    let duration = started.elapsed();
    let (output, kept) = match tokio::time::timeout(Duration::from_secs(5), collector).await {
        Ok(Ok(buf)) => buf.finish_kept(),
        _ => (
            "[output unavailable: a process outside the group kept the pipe open]".into(),
            None,
        ),
    };
    // A shell killed by a signal reports it as 128 + the signal, as the shells it runs do.
    let exit_code = status.and_then(|s| {
        use std::os::unix::process::ExitStatusExt as _;
        s.code().or_else(|| s.signal().map(|sig| 128 + sig))
    });
    // Under RLIMIT_AS an allocation is refused rather than the process killed: a failure that
    // says so is reported as running out of memory, like the container's OOM kill.
    let oom_killed = cmd.limits.address_space_bytes.is_some()
        && !timed_out
        && exit_code != Some(0)
        && says_out_of_memory(&output);
    Ok(CommandOutput {
        exit_code,
        timed_out,
        oom_killed,
        killed,
        output,
        kept,
        put_back: vec![],
        duration,
    })
}

/// True when the end of a failed command's output is a refused allocation (Python's
/// `MemoryError`, C's `ENOMEM`, C++'s `bad_alloc`, Rust's allocation failure).
fn says_out_of_memory(output: &str) -> bool {
    let tail = &output[output.len().saturating_sub(2048)..];
    let tail = tail.trim_end();
    let last = tail.lines().last().unwrap_or("");
    last.starts_with("MemoryError")
        || last.contains("Cannot allocate memory")
        || last.contains("std::bad_alloc")
        || last.contains("memory allocation of")
}

fn apply_rlimits(limits: &Rlimits) -> std::io::Result<()> {
    let set = |resource, value: Option<u64>| -> std::io::Result<()> {
        if let Some(v) = value {
            let lim = libc::rlimit {
                rlim_cur: v as libc::rlim_t,
                rlim_max: v as libc::rlim_t,
            };
            // SAFETY: a plain syscall on a stack value.
            if unsafe { libc::setrlimit(resource, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    set(libc::RLIMIT_CPU, limits.cpu_seconds)?;
    set(libc::RLIMIT_AS, limits.address_space_bytes)?;
    set(libc::RLIMIT_FSIZE, limits.file_size_bytes)?;
    set(libc::RLIMIT_NPROC, limits.processes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(script: &str, timeout_ms: u64) -> LocalCommand {
        LocalCommand::new(
            script,
            &std::env::temp_dir(),
            Duration::from_millis(timeout_ms),
        )
    }

    #[tokio::test]
    async fn exit_code_and_interleaved_output() {
        let out = run(&cmd("echo one; echo two >&2; echo three; exit 3", 10_000))
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert!(!out.success());
        assert_eq!(out.output, "one\ntwo\nthree\n");
    }

    /// True while `pid` runs (a zombie counts as gone).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z'),
            Err(_) => false,
        }
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        // A background child would outlive a kill of the shell alone.
        let c = LocalCommand::new(
            "sleep 60 & echo $! > bg.pid; sleep 60",
            dir.path(),
            Duration::from_millis(500),
        );
        let out = run(&c).await.unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert_eq!(out.describe(), "timed out after 0 s");
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(pid) {
            assert!(
                Instant::now() < deadline,
                "background child {pid} survived the timeout"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn environment_is_clean() {
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("VIBELOOP_SECRET_FOR_TEST", "leak") };
        let out = run(&cmd("env", 10_000)).await.unwrap();
        assert!(!out.output.contains("leak"), "{}", out.output);
        assert!(out.output.contains("PATH="));
    }

    #[tokio::test]
    async fn output_over_the_cap_is_cut_with_a_note() {
        let mut c = cmd(
            "head -c 200000 /dev/zero | tr '\\0' x; echo; echo END",
            10_000,
        );
        c.output_cap = 1000;
        let out = run(&c).await.unwrap();
        assert!(out.output.len() < 1200, "{}", out.output.len());
        assert!(out.output.contains("bytes of output cut"));
        assert!(out.output.ends_with("END\n"));
    }

    #[tokio::test]
    async fn a_memory_hog_is_refused_and_reported_out_of_memory() {
        let mut c = cmd(
            "python3 -c 'x = bytearray(600 * 1024 * 1024); print(len(x))'",
            30_000,
        );
        c.limits.address_space_bytes = Some(256 * 1024 * 1024);
        let out = run(&c).await.unwrap();
        assert!(out.oom_killed, "{out:?}");
        assert_eq!(out.describe(), "killed: out of memory");
        // A failure that is not about memory is not mistaken for one.
        let mut c = cmd("echo 'assert failed'; exit 1", 10_000);
        c.limits.address_space_bytes = Some(256 * 1024 * 1024);
        assert!(!run(&c).await.unwrap().oom_killed);
    }

    #[tokio::test]
    async fn cpu_time_is_limited() {
        // A busy loop with a generous wall-clock timeout: the CPU limit ends it first.
        let mut c = cmd("while :; do :; done", 60_000);
        c.limits.cpu_seconds = Some(1);
        let out = run(&c).await.unwrap();
        assert!(!out.timed_out, "{out:?}");
        // Killed by SIGXCPU at the soft limit (or SIGKILL at the hard one), as 128 + it.
        assert!(
            [128 + libc::SIGXCPU, 128 + libc::SIGKILL].contains(&out.exit_code.unwrap_or(0)),
            "killed by a signal: {out:?}"
        );
    }

    #[test]
    fn out_of_memory_is_read_from_the_last_line() {
        assert!(says_out_of_memory(
            "Traceback (most recent call last):\n  ...\nMemoryError\n"
        ));
        assert!(says_out_of_memory(
            "sh: 1: cannot fork: Cannot allocate memory\n"
        ));
        assert!(!says_out_of_memory(
            "MemoryError\nbut then it recovered and failed otherwise\n"
        ));
        assert!(!says_out_of_memory(""));
    }

    #[tokio::test]
    async fn file_size_limit_applies() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = LocalCommand::new(
            "head -c 100000 /dev/zero > big",
            dir.path(),
            Duration::from_secs(10),
        );
        c.limits.file_size_bytes = Some(10_000);
        let out = run(&c).await.unwrap();
        assert!(!out.success());
        assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 10_000);
    }
}
