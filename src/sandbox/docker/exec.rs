//! Running a command in a worktree's container (`docker exec`): its output through one pipe,
//! its time limit, what stopped it, and — when it must end — every process of the commands'
//! user ended with it.

use std::time::{Duration, Instant};

use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::query_parameters::RestartContainerOptionsBuilder;
use futures_util::StreamExt as _;

use super::{DockerSandbox, GRACE, SH, TIMEOUT, docker_err};
use crate::sandbox::{CappedBuffer, CommandOutput, SandboxError};

impl DockerSandbox {
    /// Runs `script` under `sh -c` in `/work`, killed at `timeout` or when `stop` says why it
    /// must end; output capped at `cap`, and the lines `keep` chooses kept from all of it.
    pub async fn exec(
        &self,
        script: &str,
        timeout: Duration,
        (cap, keep): (usize, Option<crate::sandbox::Keep>),
        stop: impl std::future::Future<Output = String>,
    ) -> Result<CommandOutput, SandboxError> {
        let started = Instant::now();
        let secs = timeout.as_secs().max(1).to_string();
        // `timeout` kills the command's whole process group at the limit. The bot's own
        // programs by their absolute paths in the image: never found through the `PATH` the
        // environment sets, which a ticket's code may have planted a program in.
        // One pipe for both streams, as the local backend has: the engine reads stdout and
        // stderr from two pipes, so lines written in turn to each (cargo's `Running …` to
        // stderr, the tests' results to stdout) could arrive out of order, and a test then be
        // read as another target's.
        let script = format!("exec 2>&1\n{script}");
        let cmd = vec![TIMEOUT, "-s", "KILL", secs.as_str(), SH, "-c", &script];
        let buf = CappedBuffer::keeping(cap, keep);
        let (mut buf, finished, killed) = self.run(cmd, buf, timeout + GRACE, stop).await?;
        if finished.is_none() {
            // Boxed: a rare path, kept out of every command's future (a debug build's worker
            // stack is only 2 MiB).
            Box::pin(self.end_every_process()).await;
            match &killed {
                Some(why) => buf.push(format!("\n[killed: {why}]\n").as_bytes()),
                None => buf.push(b"\n[killed: the command outlived its timeout]\n"),
            }
        }
        let exit_code = match &finished {
            Some(id) => self
                .docker
                .inspect_exec(id)
                .await
                .map_err(docker_err)?
                .exit_code
                .map(|c| c as i32),
            None => None,
        };
        let duration = started.elapsed();
        let mut oom_killed = false;
        if exit_code == Some(137) || finished.is_none() {
            let now = self.oom_kill_count().await;
            let mut seen = self.oom_kills.lock().await;
            oom_killed = now > *seen;
            *seen = now;
        }
        let timed_out = !oom_killed
            && killed.is_none()
            && (finished.is_none() || (exit_code == Some(137) && duration >= timeout));
        let (output, kept) = buf.finish_kept();
        Ok(CommandOutput {
            exit_code: if timed_out { None } else { exit_code },
            timed_out,
            oom_killed: oom_killed && killed.is_none(),
            killed,
            output,
            kept,
            put_back: vec![],
            duration,
        })
    }

    /// Runs `cmd`, collecting output into `buf` until it ends, `limit` passes or `stop` says
    /// why it must end. Returns the exec id when it ended, and `stop`'s reason when that came
    /// first.
    async fn run(
        &self,
        cmd: Vec<&str>,
        mut buf: CappedBuffer,
        limit: Duration,
        stop: impl std::future::Future<Output = String>,
    ) -> Result<(CappedBuffer, Option<String>, Option<String>), SandboxError> {
        let exec = self
            .docker
            .create_exec(
                &self.id,
                CreateExecOptions {
                    cmd: Some(cmd),
                    user: Some(self.user.as_str()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    working_dir: Some(crate::sandbox::WORK_MOUNT),
                    ..Default::default()
                },
            )
            .await
            .map_err(docker_err)?;
        let StartExecResults::Attached { mut output, .. } = self
            .docker
            .start_exec(&exec.id, None)
            .await
            .map_err(docker_err)?
        else {
            return Err(SandboxError::Docker("exec started detached".into()));
        };
        let mut stop = std::pin::pin!(stop);
        let collected = tokio::time::timeout(limit, async {
            loop {
                tokio::select! {
                    chunk = output.next() => match chunk {
                        Some(Ok(
                            LogOutput::StdOut { message }
                            | LogOutput::StdErr { message }
                            | LogOutput::Console { message },
                        )) => buf.push(&message),
                        Some(Ok(LogOutput::StdIn { .. })) => {}
                        Some(Err(_)) | None => return None,
                    },
                    why = &mut stop => return Some(why),
                }
            }
        })
        .await;
        Ok(match collected {
            Ok(None) => (buf, Some(exec.id), None),
            Ok(Some(why)) => (buf, None, Some(why)),
            Err(_) => (buf, None, None),
        })
    }

    /// Ends every process of the commands' user in the container (its init and sleeper run as
    /// another): `kill -9 -1` inside it — the shell's own, since an image may have no
    /// `/bin/kill` (ours has none) — or, where that did not run in time, a restart.
    async fn end_every_process(&self) {
        let limit = Duration::from_secs(10);
        let kill = vec![SH, "-c", "kill -9 -1"];
        let pending = std::future::pending();
        match self
            .run(kill, CappedBuffer::new(1024), limit, pending)
            .await
        {
            Ok((_, Some(_), _)) => return,
            Ok(_) => {
                tracing::warn!(container = %self.name, "kill -9 -1 did not end in time: restarting the container")
            }
            Err(e) => {
                tracing::warn!(container = %self.name, error = %e, "kill -9 -1 did not run: restarting the container")
            }
        }
        let options = RestartContainerOptionsBuilder::default()
            .signal("SIGKILL")
            .t(0)
            .build();
        if let Err(e) = self.docker.restart_container(&self.id, Some(options)).await {
            tracing::error!(container = %self.name, error = %e, "cannot restart the container to end its commands");
        }
    }

    async fn oom_kill_count(&self) -> u64 {
        let script =
            "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null";
        match self
            .run(
                vec![SH, "-c", script],
                CappedBuffer::new(4096),
                Duration::from_secs(10),
                std::future::pending(),
            )
            .await
        {
            Ok((buf, _, _)) => buf
                .finish()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("oom_kill ")
                        .and_then(|n| n.trim().parse().ok())
                })
                .unwrap_or(0),
            Err(_) => 0,
        }
    }
}
