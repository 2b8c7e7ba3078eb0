//! `vibeloop run --ask "…"`: the question filed as `/hive ask` would file it (on the scratch
//! forge's issue), answered by the hive's workers, and the answer printed as it was posted:
//! citations linked or marked, the spend underneath.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::follow::elapsed;
use crate::hive::{self, Hive};
use crate::ids::RepoName;
use crate::store::jobs::JobKey;
use crate::store::questions::NewQuestion;

/// How often the store is read.
const POLL: Duration = Duration::from_millis(200);

/// A question and where it is asked.
pub struct Asked<'a> {
    pub repo: &'a RepoName,
    pub issue: u64,
    pub base: &'a str,
    pub question: &'a str,
}

/// Asks, waits for the answer and prints it; the exit code: 0 answered, 1 not.
pub async fn ask(
    hive: Arc<Hive>,
    a: &Asked<'_>,
    limit: Duration,
    clock: Instant,
) -> anyhow::Result<u8> {
    let source = format!("run:{}", std::process::id());
    hive.store
        .ask_question(&NewQuestion {
            source: &source,
            repo: a.repo,
            installation_id: super::local::INSTALLATION,
            issue: a.issue,
            pull_request: false,
            thread: None,
            base_branch: a.base,
            author: "you",
            question: a.question,
        })
        .await?;
    println!(
        "[{}] asked: {}",
        elapsed(clock),
        super::follow::clean(a.question, 100)
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let workers = tokio::spawn(hive::run_workers(hive.clone(), 1, stop_rx));
    hive.jobs_queued.notify_one();
    let deadline = Instant::now() + limit;
    let mut last_error: Option<String> = None;
    let code = loop {
        let q = hive
            .store
            .question(&source)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the question is gone from the run's database"))?;
        if let Some(reply) = q.reply.as_deref().filter(|_| q.answer.is_some()) {
            println!("[{}] answered\n\n{reply}", elapsed(clock));
            break 0;
        }
        if let Some(error) = &q.error {
            eprintln!("error: the question was not answered: {error}");
            break 1;
        }
        let live = hive
            .store
            .live_job(&JobKey::Question(source.clone()))
            .await?;
        let error = live.and_then(|j| j.last_error);
        if let Some(e) = error.as_deref()
            && last_error.as_deref() != Some(e)
        {
            println!(
                "[{}] retrying after: {}",
                elapsed(clock),
                super::follow::clean(e, 200)
            );
            last_error = error.clone();
        }
        if Instant::now() >= deadline {
            eprintln!("error: no answer within --timeout-minutes");
            break 1;
        }
        tokio::time::sleep(POLL).await;
    };
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(15), workers).await;
    Ok(code)
}
