//! `vibeloop gates`: runs the repository's gates on a local checkout exactly as the bot would —
//! the config read from the base, the working tree (uncommitted changes included) snapshot as a
//! commit, checked out in a scratch directory, gates run in a sandbox — and prints a table or
//! JSON. Exit code 0 only when no gate fails and the test gate ran (a skipped gate is reported as
//! skipped, never as passed). The checkout itself is not modified.

use std::path::Path;

use anyhow::{Context as _, bail};
use git2::{IndexAddOption, Repository, Signature, build::CheckoutBuilder};

use crate::config::GatesArgs;
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};
use crate::gates::pipeline::{self, Inputs, Silent};
use crate::gates::{GateResult, ORDER, acceptance, is_check};
use crate::ids::CommitSha;
use crate::sandbox::{Backend, SandboxSpec};

/// Runs the command; returns the process exit code. With `--json` every outcome is JSON on
/// standard output: the results, or an object with the error.
pub async fn run(args: &GatesArgs) -> anyhow::Result<i32> {
    match gates(args).await {
        Err(e) if args.json => {
            let said = serde_json::json!({ "error": format!("{e:#}") });
            println!("{}", serde_json::to_string_pretty(&said)?);
            Ok(1)
        }
        other => other,
    }
}

async fn gates(args: &GatesArgs) -> anyhow::Result<i32> {
    for g in &args.gates {
        if !is_check(g) {
            bail!(
                "--gate {g:?}: the gates are {} (and {}, when .github/hive.yml sets criteria)",
                ORDER.join(", "),
                acceptance::GATE
            );
        }
    }
    let force = crate::config::parse_sandbox(&args.sandbox)?;
    let repo = Repository::open(&args.repo)
        .with_context(|| format!("{} is not a git checkout", args.repo.display()))?;
    let base = resolve_base(&repo, args.base.as_deref())?;
    let yaml = read_config(&repo, &base)?;
    let files = crate::env::tree::Tree::of_commit(&repo, git2::Oid::from_str(base.as_str())?)?;
    let mut env = crate::env::resolve(yaml, &files);
    if args.explain {
        print!("{}", env.explain());
        return Ok(0);
    }
    let head = snapshot(&repo)?;
    // The change is what `head` adds to the base: compare with their merge base.
    let base: CommitSha = repo
        .merge_base(
            git2::Oid::from_str(head.as_str())?,
            git2::Oid::from_str(base.as_str())?,
        )
        .context("the checkout and --base share no history")?
        .into();
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let worktree = scratch.path().join("work");
    checkout(&repo, &head, &worktree)?;

    let (backend, fallback) = Backend::detect(scratch.path(), force).await?;
    if let Some(why) = fallback {
        eprintln!("note: running gates as local processes: no Docker engine answered ({why})");
    }
    ready_image(&backend, &mut env).await;
    let config = env.config.clone();
    let role = format!("gates-{}", std::process::id());
    let mut spec = SandboxSpec::from_config(
        &config,
        &worktree,
        ("local/checkout", "preview", &role),
        &[],
    );
    // The scratch checkout has no git: tools that take the version from tags are told it.
    let version = crate::workspace::version_at(&repo, git2::Oid::from_str(base.as_str())?);
    spec.env.extend(crate::env::version_env(&version));
    let settings = crate::env::Settings {
        envs: crate::env::Envs::new(env_dir(args)?),
        ..crate::env::Settings::new(scratch.path())
    };
    if !set_up(args, &settings, &backend, &env, &mut spec).await? {
        return Ok(1);
    }
    let sandbox = backend.start(&spec).await?;
    let inputs = Inputs {
        config: &config,
        sandbox: &sandbox,
        worktree: &worktree,
        git_dir: repo.path(),
        base: &base,
        head: &head,
        tests: None,
        notes: vec![],
        known_failures: &[],
        expect: &crate::gates::expect::Expect::default(),
    };
    let only: Vec<&str> = args.gates.iter().map(String::as_str).collect();
    let results = pipeline::run(
        &inputs,
        (!only.is_empty()).then_some(&only[..]),
        &mut Silent,
    )
    .await;
    sandbox.stop().await;
    let results = results?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", table(&results));
    }
    let tested = results.iter().any(|r| r.gate == "test" && !r.is_skipped());
    let only_others = !only.is_empty() && !only.contains(&"test");
    if !tested && !only_others {
        eprintln!(
            "error: the test gate has no command, so nothing was tested: no ecosystem was detected and {CONFIG_PATH} sets no `gates.test` (e.g. `gates: {{ test: \"make test\" }}`); see `vibeloop gates --explain`"
        );
        return Ok(1);
    }
    Ok(if results.iter().all(GateResult::ok) {
        0
    } else {
        1
    })
}

/// The sandbox image there, its problems and toolchains said.
async fn ready_image(backend: &Backend, env: &mut crate::env::Resolved) {
    let registry = crate::env::image::Registry::from_env();
    let mut pulling = |line: &str| eprintln!("image: {line}");
    let had = crate::env::image::ensure(backend, env, registry.as_ref(), &mut pulling).await;
    if let Some(said) = had.describe() {
        eprintln!("image: {said}");
    }
    for p in &env.problems {
        eprintln!("warning: {p}");
    }
    for said in crate::env::toolchain::check(backend, &env.config.image, &env.toolchains).await {
        eprintln!("toolchain: {said}");
    }
}

/// The environment made (or reused) for `spec`; `false` when setup failed, as said (in JSON
/// with `--json`).
async fn set_up(
    args: &GatesArgs,
    settings: &crate::env::Settings,
    backend: &Backend,
    env: &crate::env::Resolved,
    spec: &mut SandboxSpec,
) -> anyhow::Result<bool> {
    match settings.maker(backend).prepare(env, spec).await {
        Ok(Some(ready)) => {
            if ready.reused {
                eprintln!("setup: environment {} reused (setup skipped)", ready.key);
            } else {
                eprintln!(
                    "setup: environment {} made in {:.1}s",
                    ready.key, ready.setup_seconds
                );
            }
            if let Some(how) = &ready.how {
                eprintln!("setup: {how}");
            }
            ready.apply(spec);
        }
        Ok(None) => {}
        Err(crate::env::SetupError::Failed { command, output }) => {
            let fix = crate::env::hints::setup_hint(&output.output, &settings.network)
                .unwrap_or_else(|| format!("Fix the command (`setup:` in {CONFIG_PATH}) or the dependency manifests; `vibeloop gates --explain` shows where it comes from."));
            if args.json {
                let said = serde_json::json!({
                    "error": "setup failed",
                    "command": command,
                    "ended": output.describe(),
                    "output": output.tail(30),
                    "fix": fix,
                });
                println!("{}", serde_json::to_string_pretty(&said)?);
            } else {
                eprintln!(
                    "error: setup failed ({}): `{command}`\n{}\n{fix}",
                    output.describe(),
                    output.tail(30)
                );
            }
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    }
    Ok(true)
}

/// `--env-dir`, else [`default_env_dir`].
fn env_dir(args: &GatesArgs) -> anyhow::Result<std::path::PathBuf> {
    match &args.env_dir {
        Some(d) => Ok(d.clone()),
        None => default_env_dir(),
    }
}

/// `$XDG_CACHE_HOME/vibeloop/envs`, else `~/.cache/vibeloop/envs`: where the command-line
/// tools keep set-up environments between runs.
pub fn default_env_dir() -> anyhow::Result<std::path::PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))
        .context("neither XDG_CACHE_HOME nor HOME is set: name a directory with --env-dir")?;
    Ok(cache.join("vibeloop").join("envs"))
}

fn resolve_base(repo: &Repository, base: Option<&str>) -> anyhow::Result<CommitSha> {
    let candidates: Vec<&str> = match base {
        Some(b) => vec![b],
        None => vec!["origin/HEAD", "main", "master"],
    };
    for c in &candidates {
        if let Ok(obj) = repo.revparse_single(c) {
            return Ok(obj.peel_to_commit()?.id().into());
        }
    }
    bail!(
        "--base {}: no such commit or branch; name the branch your change is based on",
        candidates.join(" / ")
    )
}

/// `.github/hive.yml` at `base`, as the bot reads it.
fn read_config(repo: &Repository, base: &CommitSha) -> anyhow::Result<HiveConfig> {
    let tree = repo
        .find_commit(git2::Oid::from_str(base.as_str())?)?
        .tree()?;
    let text = match tree.get_path(Path::new(CONFIG_PATH)) {
        Ok(entry) => {
            String::from_utf8_lossy(entry.to_object(repo)?.peel_to_blob()?.content()).into_owned()
        }
        Err(_) => String::new(),
    };
    Ok(HiveConfig::parse(&text)?)
}

/// The working tree as a commit on top of HEAD (no branch or index on disk is touched).
fn snapshot(repo: &Repository) -> anyhow::Result<CommitSha> {
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = Signature::now("vibeloop gates", "gates@vibeloop.invalid")?;
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let oid = repo.commit(
        None,
        &sig,
        &sig,
        "vibeloop gates: working tree",
        &tree,
        &parents,
    )?;
    Ok(oid.into())
}

/// Checks `head` out into `dir`, noting each submodule (which it leaves empty).
fn checkout(repo: &Repository, head: &CommitSha, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let head = git2::Oid::from_str(head.as_str())?;
    let tree = repo.find_commit(head)?.tree()?;
    let mut co = CheckoutBuilder::new();
    co.target_dir(dir).force().recreate_missing(true);
    repo.checkout_tree(tree.as_object(), Some(&mut co))?;
    for path in crate::workspace::submodules_at(repo, head)? {
        eprintln!(
            "note: `{path}` is a git submodule, which is not checked out: the sandbox sees an empty directory"
        );
    }
    Ok(())
}

/// The human-readable report.
fn table(results: &[GateResult]) -> String {
    let mut s = format!(
        "{:<10} {:<14} {:>8} {:>9}  {}\n",
        "gate", "status", "time", "findings", "command"
    );
    for r in results {
        let time = if r.duration.is_zero() {
            "-".into()
        } else {
            format!("{:.1}s", r.duration.as_secs_f64())
        };
        let cmd = r.command.as_deref().map_or_else(
            || r.notes.first().cloned().unwrap_or_default(),
            crate::gates::report::shown,
        );
        s.push_str(&format!(
            "{:<10} {:<14} {:>8} {:>9}  {}\n",
            r.gate,
            if r.held.is_some() {
                "held"
            } else {
                r.status.as_str()
            },
            time,
            r.annotations.len(),
            cmd
        ));
    }
    for r in results.iter().filter(|r| r.held.is_some()) {
        let why = r.notes.first().map(String::as_str).unwrap_or_default();
        s.push_str(&format!("\n{}: {why}\n", r.gate));
    }
    for r in results.iter().filter(|r| !r.ok()) {
        s.push_str(&format!("\n{}: {}\n", r.gate, r.describe()));
        for a in r.annotations.iter().take(20) {
            s.push_str(&format!("  {}:{}: {}\n", a.path, a.start_line, a.message));
        }
        if let Some(out) = &r.output {
            for line in out.tail(15).lines() {
                s.push_str(&format!("  | {line}\n"));
            }
        }
    }
    s.push_str(&format!("\n{}\n", crate::gates::tally(results)));
    s
}
