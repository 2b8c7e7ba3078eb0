//! `vibeloop run --repo DIR --goal TEXT`: the whole hive on a local repository, without GitHub.
//!
//! The repository's base branch is copied into a scratch bare repository that an in-process
//! forge ([`crate::forge`]) serves on 127.0.0.1 ([`local`]); the goal becomes an issue there,
//! and the unchanged hive — Architect, Breaker and Builder in their own worktrees and sandboxes,
//! the red proof, the gates, the Critic, and with `--approve` the rebase, re-gate, merge and tag
//! — runs it as it would a labelled issue, while the command prints the ticket's timeline
//! ([`follow`]) and then a report of what the bot observed ([`report`]). The person's own
//! repository is only read: nothing is pushed and none of its refs moves. Everything the run
//! made stays in its data directory for a look afterwards. `--plan-only` stops at the plan;
//! `--ask` asks the read-only agent a question instead ([`ask`]).

mod ask;
mod follow;
mod local;
mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::sync::{Notify, watch};

use crate::config::repo::HiveConfig;
use crate::config::tools::RunArgs;
use crate::github::GitHubApp;
use crate::hive::{self, Hive};
use crate::store::tickets::NewTicket;
use crate::workspace::Author;

/// Jobs at once: the ticket's run (a re-gate or approval queues another).
const WORKERS: usize = 2;
/// Longest title taken from the goal's first line.
const TITLE_CHARS: usize = 100;

/// Runs the hive on `args.repo`; returns the exit code: 0 when the change is done or waits for
/// approval, 1 when the ticket failed or needs a person, 2 for bad input.
pub async fn run(args: &RunArgs) -> anyhow::Result<u8> {
    let checked = match check(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(2);
        }
    };
    let level = if args.verbose { "info" } else { "warn" };
    crate::app::init_logging_with(false, level);
    let router = super::router(&checked.llm)?;
    let models =
        super::doctor::models::check_routes(&router, checked.llm.models_file.as_ref()).await;
    if models.iter().any(|c| c.failed()) {
        for c in models.iter().filter(|c| c.failed()) {
            eprintln!("{c}");
        }
        eprintln!("error: the agents' model is not usable (see above); nothing was started");
        return Ok(2);
    }
    let Checked {
        src,
        llm,
        sandbox,
        goal,
    } = checked;
    let data_dir = make_data_dir(args.data_dir.as_deref())?;
    let clock = Instant::now();
    println!(
        "Vibeloop run on {} from {} at {}",
        src.path.display(),
        src.base,
        src.base_sha.short()
    );
    if src.dirty {
        println!(
            "note: uncommitted changes in {} are not part of the run; commit them to include them",
            src.path.display()
        );
    }
    let (title, body) = match &goal {
        Goal::Change(goal) => issue_text(goal),
        Goal::Question(q) => (QUESTION_TITLE.to_owned(), q.clone()),
    };
    let label = HiveConfig::default().label;
    let local = local::start(&src, &data_dir, &title, &body, &label).await?;
    let store = super::open_store(&format!(
        "sqlite://{}?mode=rwc",
        data_dir.join("vibeloop.db").display()
    ))
    .await?;
    let jobs_queued = Arc::new(Notify::new());
    let hive = Arc::new(Hive {
        store: store.clone(),
        github: Arc::new(GitHubApp::new(
            &local.creds,
            &local.api_url,
            &crate::config::default_graphql_url(&local.api_url),
        )?),
        // No disk per worktree here: `vibeloop run` leaves its worktrees for the person to
        // read, and a mount left in their directory would outlive the run.
        workspace: crate::workspace::Workspace::new(&data_dir, &local.git_url),
        models: Arc::new(router),
        prompts: crate::agent::prompts::Prompts::new(llm.prompts_dir.clone()),
        sandbox: super::start_sandbox_backend(&data_dir, sandbox).await?,
        environments: crate::env::Settings::new(&data_dir),
        author: Author::default(),
        owner: format!("vibeloop-run-{}", std::process::id()),
        sweep_every: Duration::from_secs(600),
        lease: Duration::from_secs(60),
        jobs_queued: jobs_queued.clone(),
    });
    println!("sandbox: {}", hive.sandbox.name());
    if let Goal::Question(question) = &goal {
        let asked = ask::Asked {
            repo: &local.repo,
            issue: local.issue,
            base: &src.base,
            question,
        };
        let limit = Duration::from_secs(args.timeout_minutes.max(1) * 60);
        let code = ask::ask(hive.clone(), &asked, limit, clock).await?;
        store.close().await;
        return Ok(code);
    }
    let start = if args.plan_only {
        crate::store::tickets::Start::PlanCommand
    } else {
        Default::default()
    };
    let (ticket, _) = store
        .open_ticket(&NewTicket {
            repo: &local.repo,
            issue_number: local.issue,
            installation_id: local::INSTALLATION,
            title: &title,
            body: &body,
            base_branch: &src.base,
            chosen_base: None,
            start,
        })
        .await?;
    println!(
        "[{}] {} opened: {}",
        follow::elapsed(clock),
        ticket.id,
        follow::clean(&title, TITLE_CHARS)
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let workers = tokio::spawn(hive::run_workers(hive.clone(), WORKERS, stop_rx));
    jobs_queued.notify_one();
    let limit = Duration::from_secs(args.timeout_minutes.max(1) * 60);
    let ending = follow::follow(&hive, ticket.key, args.approve, limit, clock).await?;
    let _ = stop_tx.send(true);
    if tokio::time::timeout(Duration::from_secs(15), workers)
        .await
        .is_err()
    {
        eprintln!("warning: a step was still running after 15 s; it was cut short");
    }
    if let Err(e) = hive
        .sandbox
        .remove_ticket(local.repo.as_str(), &ticket.id.to_string())
        .await
    {
        eprintln!("warning: cannot remove the run's sandboxes: {e}");
    }
    let report = report::Report::gather(
        &store,
        ticket.key,
        ending,
        clock.elapsed(),
        (src.path.clone(), local.bare_path(), data_dir.clone()),
    )
    .await?;
    print!("{report}");
    if let Some(path) = &args.json_report {
        let json = serde_json::to_string_pretty(&report.json())?;
        std::fs::write(path, json)
            .with_context(|| format!("cannot write --json-report {}", path.display()))?;
    }
    store.close().await;
    Ok(report.exit_code())
}

/// The issue a question is filed under (the hive answers on it).
const QUESTION_TITLE: &str = "Question";

/// The run's settings, checked before anything is made.
struct Checked {
    src: local::Source,
    llm: crate::config::llm::LlmConfig,
    sandbox: Option<crate::config::SandboxKind>,
    goal: Goal,
}

/// What the run is for.
enum Goal {
    /// A change, as an issue's text.
    Change(String),
    /// A question for the read-only agent.
    Question(String),
}

fn check(args: &RunArgs) -> anyhow::Result<Checked> {
    let goal = match (&args.goal, &args.goal_file, &args.ask) {
        (_, _, Some(q)) if q.trim().is_empty() => {
            anyhow::bail!("--ask is empty: ask a question about the repository")
        }
        (_, _, Some(q)) => Goal::Question(q.trim().to_owned()),
        (Some(g), _, _) => Goal::Change(g.clone()),
        (None, Some(path), _) => Goal::Change(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --goal-file {}", path.display()))?,
        ),
        (None, None, None) => {
            anyhow::bail!("say what to change with --goal or --goal-file, or ask with --ask")
        }
    };
    if let Goal::Change(text) = &goal
        && text.trim().is_empty()
    {
        let which = if args.goal.is_some() {
            "--goal"
        } else {
            "--goal-file"
        };
        anyhow::bail!("{which} is empty: say what to change, as you would in an issue");
    }
    let llm = args.llm.config()?;
    let sandbox = crate::config::parse_sandbox(&args.sandbox)?;
    let src = local::inspect(&args.repo, args.base.as_deref())?;
    if let Some(dir) = &args.data_dir
        && std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
    {
        anyhow::bail!(
            "--data-dir {} is not empty (an earlier run?); name a new directory, or remove that one",
            dir.display()
        );
    }
    Ok(Checked {
        src,
        llm,
        sandbox,
        goal,
    })
}

/// The run's directory: `given` (checked to be new or empty), else a new one under the
/// system's temporary directory. It is kept after the run.
fn make_data_dir(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match given {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create --data-dir {}", dir.display()))?;
            dir.to_owned()
        }
        None => tempfile::Builder::new()
            .prefix("vibeloop-run-")
            .tempdir()
            .context("cannot make a directory for the run under the temporary directory")?
            .keep(),
    };
    Ok(dir.canonicalize().unwrap_or(dir))
}

/// The issue's title (the goal's first line, shortened) and body (the whole goal).
fn issue_text(goal: &str) -> (String, String) {
    let goal = goal.trim();
    let first = goal.lines().next().unwrap_or_default().trim();
    let mut title: String = first.chars().take(TITLE_CHARS).collect();
    if first.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    (title, goal.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_goal_gives_the_issue() {
        let (title, body) = issue_text("  Make add() add\n\nIt subtracts.  ");
        assert_eq!(title, "Make add() add");
        assert_eq!(body, "Make add() add\n\nIt subtracts.");
        let (title, _) = issue_text(&"x".repeat(150));
        assert_eq!(title.chars().count(), TITLE_CHARS + 1);
    }
}
