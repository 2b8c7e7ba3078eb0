//! The Docker engine goes away in the middle of a gate and comes back: the bot talks to the
//! engine through a proxy socket this test controls (`DOCKER_HOST`). Cutting it drops every
//! connection (the running `exec` included) and refuses new ones; restoring it lets them through
//! again. The ticket must recover — gates run again once the engine answers — and every GitHub
//! side effect still happens once.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use support::hive::*;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;
use vibeloop::ticket::TaskState;

const ENGINE: &str = "/var/run/docker.sock";

/// A Unix-socket proxy in front of the Docker engine that can be cut and restored.
struct EngineProxy {
    path: PathBuf,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
}

impl EngineProxy {
    fn start(path: &Path) -> EngineProxy {
        let mut p = EngineProxy {
            path: path.to_owned(),
            tasks: Arc::default(),
            accept: None,
        };
        p.restore();
        p
    }

    /// Listens again: new connections reach the engine.
    fn restore(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let listener = UnixListener::bind(&self.path).unwrap();
        let tasks = self.tasks.clone();
        self.accept = Some(tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let pipe = tokio::spawn(async move {
                    if let Ok(mut engine) = UnixStream::connect(ENGINE).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut engine).await;
                    }
                });
                tasks.lock().unwrap().push(pipe);
            }
        }));
    }

    /// The engine is gone: every open connection drops and new ones are refused.
    fn cut(&mut self) {
        if let Some(a) = self.accept.take() {
            a.abort();
        }
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_lost_mid_gate_and_back_the_ticket_recovers_with_each_side_effect_once() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("docker.sock");
    let mut proxy = EngineProxy::start(&socket);
    // The test gate takes a while, so the cut lands inside it.
    let yml = "gates: { test: \"sleep 2; python3 -m unittest -v\" }\nreview: { require_human_approval: false }\n";
    let w = World::start_with(
        happy_script(),
        &calc(yml),
        vec![
            ("DOCKER_HOST".into(), format!("unix://{}", socket.display())),
            ("VIBELOOP_SANDBOX".into(), "docker".into()),
        ],
    )
    .await;
    w.label().await;
    w.bot
        .wait_until("the test gate to run", WAIT, || async {
            w.gh.check_runs(REPO)
                .iter()
                .any(|c| c.name == "hive/test" && c.status == "in_progress")
                .then_some(())
        })
        .await;
    proxy.cut();
    // The engine stays away until the bot has noticed.
    w.bot
        .wait_until("the bot to notice the engine is gone", WAIT, || async {
            w.bot.log().contains("will retry").then_some(())
        })
        .await;
    proxy.restore();

    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.issue_number, w.issue);
    w.assert_each_side_effect_once();
    let test_runs: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test")
            .collect();
    assert!(
        test_runs.iter().all(|c| c.status == "completed"),
        "a check run was left in progress: {test_runs:?}"
    );
    // The cut gate says what happened; the gates ran again and passed.
    assert!(
        test_runs
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("cancelled")
                && c.summary
                    .as_deref()
                    .unwrap_or("")
                    .contains("The sandbox could not run this gate")),
        "{test_runs:?}"
    );
    assert!(
        test_runs
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("success")),
        "{test_runs:?}"
    );
    proxy.cut();
}
