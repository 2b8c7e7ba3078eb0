//! The gates as GitHub sees them: each a check run `hive/<gate>` on the commit (created queued,
//! moved in progress when its turn comes, completed with the report's title, summary and
//! annotations), and the red proof as `hive/red-proof`. Check runs are found again by
//! `external_id` before any create, so a resumed step never makes a second.

use crate::gates::pipeline::Reporter;
use crate::gates::report::{summary, title};
use crate::gates::{GateResult, Status};
use crate::github::checks::{CheckOutput, CheckRun, Conclusion};
use crate::github::{GitHubError, RepoClient};
use crate::ids::CommitSha;

/// What a gate's result is on GitHub: a held green is "action required" (branch protection
/// does not take it for a pass).
pub fn conclusion(result: &GateResult) -> Conclusion {
    if result.held.is_some() {
        return Conclusion::ActionRequired;
    }
    match result.status {
        Status::Passed => Conclusion::Success,
        Status::Skipped => Conclusion::Skipped,
        Status::TimedOut => Conclusion::TimedOut,
        Status::Failed | Status::OutOfMemory => Conclusion::Failure,
    }
}

/// Reports a pipeline run as check runs on `head`, with external ids `<run_id>:<gate>`.
pub struct CheckRuns<'a> {
    pub client: &'a RepoClient,
    pub head: &'a CommitSha,
    pub run_id: String,
    /// `(gate, its check run)`, in order; those not completed yet are at the back.
    runs: Vec<(&'static str, CheckRun)>,
    done: usize,
}

impl<'a> CheckRuns<'a> {
    pub fn new(client: &'a RepoClient, head: &'a CommitSha, run_id: String) -> Self {
        Self {
            client,
            head,
            run_id,
            runs: Vec::new(),
            done: 0,
        }
    }

    fn run_of(&self, gate: &str) -> Option<&CheckRun> {
        self.runs.iter().find(|(g, _)| *g == gate).map(|(_, r)| r)
    }
}

impl Reporter for CheckRuns<'_> {
    type Error = GitHubError;

    async fn queued(&mut self, gates: &[&'static str]) -> Result<(), GitHubError> {
        // All at once: each is found or made on its own (its external id), and the gates that
        // run side by side start together.
        let (client, head, run_id) = (&self.client, self.head, &self.run_id);
        let runs = futures_util::future::try_join_all(gates.iter().map(|gate| async move {
            let external_id = format!("{run_id}:{gate}");
            let name = format!("hive/{gate}");
            let run = client
                .ensure_check_run(&name, head, &external_id, "queued")
                .await?;
            Ok::<_, GitHubError>((*gate, run))
        }))
        .await?;
        self.runs.extend(runs);
        Ok(())
    }

    async fn started(&mut self, gate: &'static str) -> Result<(), GitHubError> {
        if let Some(run) = self.run_of(gate) {
            self.client
                .check_run_started(run.id, &format!("hive/{gate}: running"))
                .await?;
        }
        Ok(())
    }

    async fn finished(&mut self, result: &mut GateResult) -> Result<(), GitHubError> {
        let Some(run) = self.run_of(result.gate).cloned() else {
            return Ok(());
        };
        result.check_run_url = run.html_url.clone();
        let output = CheckOutput {
            title: title(result),
            summary: summary(result),
        };
        self.client
            .complete_check_run(run.id, conclusion(result), &output, &result.annotations)
            .await?;
        // A held green: a person with write permission may approve it from the check run.
        if result.held.is_some() {
            self.client
                .offer_actions(run.id, &[crate::github::checks::APPROVE])
                .await?;
        }
        self.done += 1;
        Ok(())
    }

    /// The gate that was running and those still queued are completed as cancelled, saying
    /// why, so none stays "in progress" on GitHub; the job is retried and the gates run again.
    async fn abandoned(&mut self, why: &str) {
        let output = CheckOutput {
            title: "Not run: the sandbox failed".into(),
            summary: format!(
                "The sandbox could not run this gate ({why}). Vibeloop retries on its own; the gates run again."
            ),
        };
        for (_, run) in &self.runs[self.done..] {
            if let Err(err) = self
                .client
                .complete_check_run(run.id, Conclusion::Cancelled, &output, &[])
                .await
            {
                tracing::warn!(check_run = run.id, error = %err, "cannot mark the check run cancelled");
            }
        }
    }
}

/// Reports a red proof as check run `hive/red-proof` on `sha` (the Breaker's commit).
pub async fn red_proof(
    client: &RepoClient,
    sha: &CommitSha,
    external_id: &str,
    verdict: &crate::gates::redproof::Verdict,
    output: &crate::sandbox::CommandOutput,
) -> Result<(), GitHubError> {
    let run = client
        .ensure_check_run("hive/red-proof", sha, external_id, "in_progress")
        .await?;
    let (holds, title, summary) = crate::gates::redproof::report(verdict, output);
    let conclusion = if holds {
        Conclusion::Success
    } else {
        Conclusion::Failure
    };
    client
        .complete_check_run(run.id, conclusion, &CheckOutput { title, summary }, &[])
        .await
}
