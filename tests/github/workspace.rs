//! Git through git2 against the fake GitHub's smart-HTTP server: a mirror fetched with the
//! installation token (handed over only by the credential callback), a worktree per branch,
//! commits authored as the app, pushes — and refusals without a valid token.

use crate::support;

use std::time::Duration;

use secrecy::SecretString;
use support::bot::app_public_key;
use support::fake_github::{self, FakeGitHub};
use vibeloop::ids::RepoName;
use vibeloop::workspace::{Author, Workspace, WorkspaceError};

/// The fake GitHub with installation 7 and its repository `acme/widgets`, and a workspace on it.
pub(crate) async fn setup() -> (tempfile::TempDir, FakeGitHub, Workspace, RepoName) {
    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start(fake_github::Options {
        app_id: 1,
        public_key_pem: app_public_key(),
        git_root: dir.path().join("gh"),
        token_ttl: Duration::from_secs(3600),
    })
    .await;
    gh.add_installation(7, "acme");
    gh.add_repo(
        7,
        "acme/widgets",
        &[("README.md", "hello\n"), ("src/lib.py", "x = 1\n")],
    );
    let ws = Workspace::new(&dir.path().join("data"), &url::Url::parse(&gh.url).unwrap());
    (dir, gh, ws, RepoName::parse("acme/widgets").unwrap())
}

fn all_files_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in ignore::WalkBuilder::new(dir)
        .hidden(false)
        .ignore(false)
        .git_ignore(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(entry.path()).unwrap_or_default(),
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_worktree_commit_push() {
    let (dir, gh, ws, repo) = setup().await;
    let token = SecretString::from(gh.mint_token(7));
    let (ws2, repo2, token2) = (ws.clone(), repo.clone(), token.clone());
    let sha = tokio::task::spawn_blocking(move || {
        let git = ws2.sync_mirror(&repo2, &token2).unwrap();
        assert_eq!(
            ws2.read_remote_file(&git, "main", "src/lib.py")
                .unwrap()
                .as_deref(),
            Some("x = 1\n")
        );
        assert_eq!(
            ws2.read_remote_file(&git, "main", "missing.txt").unwrap(),
            None
        );
        let wt = ws2
            .fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64))
            .unwrap();
        assert!(wt.path.join("README.md").exists());
        assert_eq!(
            ws2.commit_all(&wt, "nothing", &Author::default()).unwrap(),
            None,
            "committed no change"
        );
        std::fs::write(wt.path.join("src/lib.py"), "x = 2\n").unwrap();
        std::fs::remove_file(wt.path.join("README.md")).unwrap();
        std::fs::write(wt.path.join("NEW.md"), "new\n").unwrap();
        let sha = ws2
            .commit_all(&wt, "T-1: change", &Author::default())
            .unwrap()
            .expect("a commit");
        ws2.push(&repo2, "feat/T-1", &token2).unwrap();
        // A second run starts over from the base, replacing the old worktree.
        let wt = ws2
            .fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64))
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(wt.path.join("src/lib.py")).unwrap(),
            "x = 1\n"
        );
        ws2.drop_worktree(&repo2, "feat/T-1").unwrap();
        assert!(!wt.path.exists());
        sha
    })
    .await
    .unwrap();

    assert_eq!(
        gh.branch_sha("acme/widgets", "feat/T-1").as_deref(),
        Some(sha.as_str())
    );
    assert_eq!(
        gh.file_on_branch("acme/widgets", "feat/T-1", "src/lib.py")
            .as_deref(),
        Some("x = 2\n")
    );
    assert_eq!(
        gh.file_on_branch("acme/widgets", "feat/T-1", "README.md"),
        None
    );
    assert_eq!(
        gh.file_on_branch("acme/widgets", "feat/T-1", "NEW.md")
            .as_deref(),
        Some("new\n")
    );
    let git = git2::Repository::open_bare(gh.bare_path("acme/widgets")).unwrap();
    let commit = git
        .find_commit(git2::Oid::from_str(sha.as_str()).unwrap())
        .unwrap();
    assert_eq!(commit.author().name(), Some("vibeloop[bot]"));

    // The token was used (every git request carried it)…
    let git_requests: Vec<_> = gh
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(".git/"))
        .collect();
    assert!(git_requests.iter().any(|r| r.status == 200));
    // …but it is nowhere on disk: not in the mirror's config, not in a remote URL.
    let secret = secrecy::ExposeSecret::expose_secret(&token).to_owned();
    assert!(
        !all_files_text(&dir.path().join("data")).contains(&secret),
        "the token was written to disk"
    );
    let mirror = git2::Repository::open_bare(ws.mirror_path(&repo)).unwrap();
    assert_eq!(
        mirror.find_remote("origin").unwrap().url(),
        Some(format!("{}/acme/widgets.git", gh.url).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_and_push_need_a_valid_token() {
    let (_dir, gh, ws, repo) = setup().await;
    let good = SecretString::from(gh.mint_token(7));
    let bad = SecretString::from("ghs_not_a_token".to_owned());
    let other = SecretString::from(gh.mint_token(8));
    tokio::task::spawn_blocking(move || {
        for token in [&bad, &other] {
            let err = ws.sync_mirror(&repo, token).err().expect("fetch refused");
            assert!(matches!(err, WorkspaceError::Git(_)), "{err}");
        }
        let git = ws.sync_mirror(&repo, &good).unwrap();
        let wt = ws
            .fresh_worktree(&repo, &git, "feat/T-2", ("main", 64))
            .unwrap();
        std::fs::write(wt.path.join("a.txt"), "a").unwrap();
        ws.commit_all(&wt, "a", &Author::default())
            .unwrap()
            .unwrap();
        let err = ws.push(&repo, "feat/T-2", &bad).expect_err("push refused");
        assert!(
            err.to_string().contains("refused the installation token"),
            "{err}"
        );
        // A crash in the middle of adding a worktree leaves git's half-made administrative
        // directory behind (here: without its `gitdir` file); the next add starts clean.
        let admin = ws.mirror_path(&repo).join("worktrees").join("feat-T-2");
        std::fs::remove_file(admin.join("gitdir")).unwrap();
        std::fs::remove_dir_all(&wt.path).unwrap();
        let again = ws
            .fresh_worktree(&repo, &git, "feat/T-2", ("main", 64))
            .unwrap();
        assert!(again.path.join(".git").is_file(), "a worktree again");
        let missing = ws
            .fresh_worktree(&repo, &git, "feat/T-3", ("no-such-base", 64))
            .err()
            .unwrap();
        assert!(
            matches!(missing, WorkspaceError::MissingBranch(_)),
            "{missing}"
        );
    })
    .await
    .unwrap();
    assert_eq!(gh.branch_sha("acme/widgets", "feat/T-2"), None);
}

#[tokio::test]
async fn an_agents_commit_leaves_out_new_files_its_tools_did_not_write() {
    let (_dir, gh, ws, repo) = setup().await;
    let token = SecretString::from(gh.mint_token(7));
    tokio::task::spawn_blocking(move || {
        let git = ws.sync_mirror(&repo, &token).unwrap();
        let wt = ws
            .fresh_worktree(&repo, &git, "feat/T-2", ("main", 64))
            .unwrap();
        // The tools wrote NEW.py and deleted README.md; a command rewrote src/lib.py, and a
        // test left junk behind, one file in .gitignore's way.
        std::fs::write(wt.path.join(".gitignore"), "*.log\n").unwrap();
        std::fs::write(wt.path.join("NEW.py"), "y = 2\n").unwrap();
        std::fs::remove_file(wt.path.join("README.md")).unwrap();
        std::fs::write(wt.path.join("src/lib.py"), "x = 2\n").unwrap();
        std::fs::create_dir_all(wt.path.join("junk")).unwrap();
        std::fs::write(wt.path.join("junk/fill-0.bin"), [0u8; 64]).unwrap();
        std::fs::write(wt.path.join("run.log"), "log\n").unwrap();
        let written = ["NEW.py", "README.md", "run.log", "gone.py"].map(String::from);
        ws.commit_written(&wt, "T-2: change", &Author::default(), &written, &|_| true)
            .unwrap()
            .expect("a commit");
        let g = git2::Repository::open(&wt.path).unwrap();
        let tree = g.head().unwrap().peel_to_tree().unwrap();
        let mut files = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |root, e| {
            if e.kind() == Some(git2::ObjectType::Blob) {
                files.push(format!("{root}{}", e.name().unwrap()));
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        files.sort();
        assert_eq!(files, ["NEW.py", "src/lib.py"]);
        let lib = tree.get_path(std::path::Path::new("src/lib.py")).unwrap();
        let blob = lib.to_object(&g).unwrap().peel_to_blob().unwrap();
        assert_eq!(blob.content(), b"x = 2\n");
    })
    .await
    .unwrap();
}

/// A push with a lease moves the remote branch only from the head the bot expects; a commit a
/// person pushed meanwhile is left where it is, and the refusal names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_with_a_lease_never_overwrites_a_head_it_did_not_expect() {
    let (_dir, gh, ws, repo) = setup().await;
    let token = SecretString::from(gh.mint_token(7));
    let theirs = gh.push_commit("acme/widgets", "feat/T-1", &[("a.txt", "a\n")], "Bot's");
    let (ws2, repo2, token2, expected) = (ws.clone(), repo.clone(), token.clone(), theirs.clone());
    let ours = tokio::task::spawn_blocking(move || {
        let git = ws2.sync_mirror(&repo2, &token2).unwrap();
        let base = git
            .find_reference("refs/remotes/origin/feat/T-1")
            .unwrap()
            .peel_to_commit()
            .unwrap();
        let tree = base.tree().unwrap();
        let sig = git2::Signature::now("vibeloop[bot]", "bot@example.com").unwrap();
        let ours = git
            .commit(None, &sig, &sig, "Rebased", &tree, &[&base])
            .unwrap();
        ws2.set_branch(&git, "feat/T-1", ours).unwrap();
        let lease = git2::Oid::from_str(&expected).unwrap();
        ws2.push_with_lease(&repo2, "feat/T-1", Some(lease), &token2)
            .unwrap();
        ours
    })
    .await
    .unwrap();
    assert_eq!(
        gh.branch_sha("acme/widgets", "feat/T-1"),
        Some(ours.to_string())
    );

    // A person pushes; the bot's next push with its old lease is refused and changes nothing.
    let person = gh.push_commit("acme/widgets", "feat/T-1", &[("b.txt", "b\n")], "Person's");
    let (ws2, repo2, token2) = (ws.clone(), repo.clone(), token.clone());
    let refused = tokio::task::spawn_blocking(move || {
        ws2.push_with_lease(&repo2, "feat/T-1", Some(ours), &token2)
    })
    .await
    .unwrap();
    match refused {
        Err(WorkspaceError::LeaseBroken {
            found, expected, ..
        }) => {
            assert_eq!((found, expected), (person.clone(), ours.to_string()));
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(gh.branch_sha("acme/widgets", "feat/T-1"), Some(person));
    // A lease on "no such branch" refuses an existing one too.
    let (ws2, repo2, token2) = (ws.clone(), repo.clone(), token.clone());
    let new_branch = tokio::task::spawn_blocking(move || {
        let git = ws2.sync_mirror(&repo2, &token2).unwrap();
        ws2.set_branch(&git, "feat/T-1", ours).unwrap();
        ws2.push_with_lease(&repo2, "feat/T-1", None, &token2)
    })
    .await
    .unwrap();
    assert!(
        matches!(new_branch, Err(WorkspaceError::LeaseBroken { .. })),
        "{new_branch:?}"
    );
}

/// A bot killed while libgit2 wrote a ref leaves `<ref>.lock`; every later write of that ref
/// fails until the lock is gone. Clearing the stale locks (at start-up) lets the work go on, and
/// removes nothing else.
#[tokio::test]
async fn a_lock_left_by_a_killed_run_is_cleared_and_the_branch_can_be_written_again() {
    let (_dir, gh, ws, repo) = setup().await;
    let token = SecretString::from(gh.mint_token(7));
    let (ws2, repo2) = (ws.clone(), repo.clone());
    tokio::task::spawn_blocking(move || {
        let git = ws2.sync_mirror(&repo2, &token).unwrap();
        let mirror = ws2.mirror_path(&repo2);
        let stale = mirror.join("refs/heads/feat/T-1.lock");
        std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
        std::fs::write(&stale, "").unwrap();
        let blocked = ws2.fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64));
        assert!(blocked.is_err(), "libgit2 refuses to write under a lock");

        let removed = ws2.clear_stale_locks();
        assert_eq!(removed, std::slice::from_ref(&stale));
        assert!(mirror.join("HEAD").exists() && mirror.join("objects").exists());
        let wt = ws2
            .fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64))
            .expect("the branch is written once the lock is gone");
        assert!(wt.path.join("README.md").exists());
    })
    .await
    .unwrap();
}

/// What a sandbox wrote never steers the bot's git: a `.git` pointed elsewhere stops the next
/// git step, a link the change adds that leaves the repository is never committed (one the
/// branch already had stays), and nothing is copied into a worktree through a linked directory.
#[tokio::test]
async fn what_a_sandbox_wrote_never_steers_the_bots_git() {
    let (_dir, gh, ws, repo) = setup().await;
    let token = SecretString::from(gh.mint_token(7));
    tokio::task::spawn_blocking(move || {
        let git = ws.sync_mirror(&repo, &token).unwrap();
        let author = Author::default();

        // `.git` rewritten to a git directory of the sandbox's own.
        let wt = ws
            .fresh_worktree(&repo, &git, "feat/T-3", ("main", 64))
            .unwrap();
        wt.check_dot_git().unwrap();
        std::fs::write(wt.path.join(".git"), "gitdir: evil\n").unwrap();
        let refused = ws.commit_all(&wt, "T-3", &author).unwrap_err();
        assert!(matches!(refused, WorkspaceError::Tampered(_)), "{refused}");
        assert!(
            refused.to_string().contains(
                "/.git was changed by what ran in the sandbox (it now says \"gitdir: evil\")"
            ),
            "{refused}"
        );
        // A link instead of the file: the same.
        std::fs::remove_file(wt.path.join(".git")).unwrap();
        std::os::unix::fs::symlink("/etc", wt.path.join(".git")).unwrap();
        assert!(matches!(wt.open(), Err(WorkspaceError::Tampered(_))));

        // A link out of the repository is not committed; a link inside is.
        let wt = ws
            .fresh_worktree(&repo, &git, "feat/T-4", ("main", 64))
            .unwrap();
        std::os::unix::fs::symlink("README.md", wt.path.join("readme-link")).unwrap();
        ws.commit_all(&wt, "T-4: a link inside", &author)
            .unwrap()
            .expect("a commit");
        std::os::unix::fs::symlink("/etc/passwd", wt.path.join("passwd")).unwrap();
        let refused = ws.commit_all(&wt, "T-4: a link out", &author).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "passwd is a symbolic link to /etc/passwd, out of the repository: not committed"
        );
        std::fs::remove_file(wt.path.join("passwd")).unwrap();
        std::os::unix::fs::symlink("../../outside", wt.path.join("src/up")).unwrap();
        assert!(ws.commit_all(&wt, "T-4: up and out", &author).is_err());

        // Copying the Breaker's files never goes through a linked directory.
        let scratch = ws
            .fresh_worktree(&repo, &git, "vibeloop/copy", ("main", 64))
            .unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::remove_dir_all(scratch.path.join("src")).unwrap();
        std::os::unix::fs::symlink(outside.path(), scratch.path.join("src")).unwrap();
        let head = git
            .revparse_single("refs/remotes/origin/main")
            .unwrap()
            .id();
        let refused = ws
            .copy_paths(&git, head, &["src/lib.py".into()], &scratch)
            .unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("a directory on its way is a symbolic link"),
            "{refused}"
        );
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forgetting_a_name_removes_its_mirror_and_worktrees_and_a_new_sync_starts_clean() {
    let (_dir, gh, ws, repo) = setup().await;
    let token = SecretString::from(gh.mint_token(7));
    let (ws2, repo2) = (ws.clone(), repo.clone());
    tokio::task::spawn_blocking(move || {
        let git = ws2.sync_mirror(&repo2, &token).unwrap();
        let wt = ws2
            .fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64))
            .unwrap();
        std::fs::write(wt.path.join("left.txt"), "the one before's\n").unwrap();
        drop(git);
        ws2.forget(&repo2).unwrap();
        assert!(!ws2.mirror_path(&repo2).exists());
        assert!(!wt.path.exists());
        // Forgetting what is not there is no error; the next sync makes the mirror anew.
        ws2.forget(&repo2).unwrap();
        let git = ws2.sync_mirror(&repo2, &token).unwrap();
        let wt = ws2
            .fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64))
            .unwrap();
        assert!(!wt.path.join("left.txt").exists());
        assert!(wt.path.join("README.md").exists());
    })
    .await
    .unwrap();
}

/// A worktree no command runs in (room 0: a model only reads it) is a plain directory even
/// where worktrees get disks; one that commands write in is on a disk of its own. Needs root
/// and loop devices, as the sandbox's disk tests do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_worktree_that_commands_run_in_gets_a_disk() {
    let (dir, gh, ws, repo) = setup().await;
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    vibeloop::sandbox::disk::probe(&data).expect("worktree disks need root and loop devices");
    let ws = ws.with_disks(true);
    let token = SecretString::from(gh.mint_token(7));
    let (ws2, repo2) = (ws.clone(), repo.clone());
    tokio::task::spawn_blocking(move || {
        let git = ws2.sync_mirror(&repo2, &token).unwrap();
        let read = ws2
            .fresh_worktree(&repo2, &git, "vibeloop/plan-T-1", ("main", 0))
            .unwrap();
        let run = ws2
            .fresh_worktree(&repo2, &git, "feat/T-1", ("main", 64))
            .unwrap();
        assert!(read.path.join("README.md").exists());
        assert!(!vibeloop::sandbox::disk::is_on_disk(&read.path));
        assert!(vibeloop::sandbox::disk::is_on_disk(&run.path));
        ws2.drop_scratch(&repo2, "vibeloop/plan-T-1").unwrap();
        ws2.drop_worktree(&repo2, "feat/T-1").unwrap();
        assert!(!read.path.exists() && !run.path.exists());
    })
    .await
    .unwrap();
    vibeloop::sandbox::disk::release_all(&data).unwrap();
}

/// Worktrees of one mirror made at once, their checkouts outside the mirror's lock, are each
/// whole: every file, an index that sees no change, and a layout git itself reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktrees_made_at_once_are_each_whole_and_git_reads_them() {
    let (_dir, gh, ws, _) = setup().await;
    let files: Vec<(String, String)> = (0..300)
        .map(|i| (format!("pkg{}/mod{i}.py", i % 7), format!("N = {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (&**p, &**t)).collect();
    gh.add_repo(7, "acme/many", &refs);
    let repo = RepoName::parse("acme/many").unwrap();
    let token = SecretString::from(gh.mint_token(7));
    let (ws2, repo2) = (ws.clone(), repo.clone());
    tokio::task::spawn_blocking(move || ws2.sync_mirror(&repo2, &token).unwrap())
        .await
        .unwrap();
    let made: Vec<_> = (1..=4)
        .map(|n| {
            let (ws, repo) = (ws.clone(), repo.clone());
            tokio::task::spawn_blocking(move || {
                let git = git2::Repository::open_bare(ws.mirror_path(&repo)).unwrap();
                ws.fresh_worktree(&repo, &git, &format!("feat/T-{n}"), ("main", 64))
                    .unwrap()
            })
        })
        .collect();
    for (n, wt) in (1..=4).zip(futures_util::future::join_all(made).await) {
        let wt = wt.unwrap();
        for (path, text) in &files {
            assert_eq!(&std::fs::read_to_string(wt.path.join(path)).unwrap(), text);
        }
        assert_eq!(wt.changes().unwrap(), vec![], "the index sees no change");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&wt.path)
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(git(&["status", "--porcelain"]), "");
        assert_eq!(
            git(&["symbolic-ref", "HEAD"]),
            format!("refs/heads/feat/T-{n}\n")
        );
    }
    let listed = std::process::Command::new("git")
        .arg("-C")
        .arg(ws.mirror_path(&repo))
        .args(["worktree", "list", "--porcelain"])
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    for n in 1..=4 {
        assert!(
            listed.contains(&format!("branch refs/heads/feat/T-{n}\n")),
            "{listed}"
        );
    }
}
