//! Disk full in the data directory, end to end: the bot's data directory is a small tmpfs the
//! test fills to the last byte. A delivery that cannot be stored is refused with a 503 that says
//! why (GitHub marks it failed; its redelivery, once there is room, is processed once), and a
//! ticket caught mid-way by a full disk waits, then finishes once space is back — each side
//! effect on GitHub once, nothing lost. Mounting needs root, as CI runs.

use crate::support;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use support::hive::*;
use vibeloop::ticket::TaskState;

/// Size of the data directory's file system: room for the bot's database, the mirror and the
/// worktrees of the small repository, and little more.
const SIZE_MB: u32 = 48;

/// A tmpfs mounted on a directory; unmounted (lazily: the bot may hold files) when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, mb: u32) -> Tmpfs {
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mb}m,mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "cannot mount a tmpfs on {} (this test needs root, as CI runs): {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_owned())
    }

    /// Writes a file until the file system is full; returns it.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        for chunk in [1 << 20, 4096, 1] {
            let block = vec![0u8; chunk];
            while f.write_all(&block).is_ok() {}
        }
        let _ = f.sync_all();
        path
    }

    /// Fills the file system and leaves the database no room a write could reuse: its
    /// write-ahead log is checkpointed and cut to nothing first, so every write must grow it,
    /// and fails. Without this a write fits in log space an earlier checkpoint gave back for
    /// reuse, and is stored on a full disk (with a PASSIVE checkpoint here: 202 in four runs of
    /// five).
    async fn fill_to_the_log(&self) -> PathBuf {
        use sqlx::Connection as _;
        let wal = self.0.join("vibeloop.db-wal");
        let url = format!("sqlite://{}", self.0.join("vibeloop.db").display());
        let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            // The filler of a round before goes first: the checkpoint may need room.
            let _ = std::fs::remove_file(self.0.join("filler"));
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&mut db)
                .await
                .unwrap();
            let filler = self.fill();
            let left = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
            if left == 0 {
                db.close().await.unwrap();
                return filler;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the log kept {left} bytes"
            );
        }
    }

    fn free(&self, filler: &Path) {
        std::fs::remove_file(filler).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Starts the hive with its data directory on a fresh tmpfs.
async fn world_on_tmpfs(extra: Vec<(String, String)>) -> (World, Tmpfs) {
    let mut mounted = None;
    let w = World::start_prepared(happy_script(), &calc(AUTO_YML), extra, |dir| {
        mounted = Some(Tmpfs::mount(dir, SIZE_MB));
    })
    .await;
    (w, mounted.expect("mounted"))
}

/// The bot's log says it met the full disk.
async fn saw_full_disk(w: &World) {
    w.bot
        .wait_until("the bot to meet the full disk", WAIT, || async {
            let log = w.bot.log();
            (log.contains("No space left on device") || log.contains("disk is full")).then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_refused_for_a_full_disk_is_processed_once_when_redelivered() {
    let (w, tmpfs) = world_on_tmpfs(vec![]).await;
    let filler = tmpfs.fill_to_the_log().await;
    let refused = w.gh.label_issue(REPO, w.issue, "hive").await;
    assert_eq!(refused.status, 503, "{}", refused.text);

    assert!(
        refused.text.contains("the bot's disk is full")
            && refused.text.contains("redeliver it later"),
        "{}",
        refused.text
    );
    // Still answering.
    let health = reqwest::get(format!("{}/healthz", w.bot.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    tmpfs.free(&filler);
    let logged = w.gh.hook_deliveries();
    let failed = logged.last().expect("the delivery is in GitHub's log");
    assert_eq!(failed.status_code, 503);
    let again =
        w.gh.deliver(&failed.event, &failed.body, Some(&failed.guid))
            .await;
    assert_eq!(again.status, 202, "{}", again.text);
    w.wait_state(TaskState::Completed).await;
    w.assert_each_side_effect_once();
    let store = w.bot.store().await;
    let rows = store.delivery_statuses().await.unwrap();
    assert_eq!(
        rows.iter().filter(|(d, _)| *d == failed.guid).count(),
        1,
        "{rows:?}"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_caught_by_a_full_disk_finishes_once_space_is_back() {
    let (w, tmpfs) = world_on_tmpfs(vec![("VIBELOOP_LEASE_SECONDS".into(), "3".into())]).await;
    // Stop the ticket in the Critic's call: its pull request and check runs exist by then.
    w.llm.hold("critic");
    w.label().await;
    w.bot
        .wait_until("the Critic's call", WAIT, || async {
            (w.llm.waiting() > 0).then_some(())
        })
        .await;
    let filler = tmpfs.fill();
    // The base moves meanwhile: the rebase and the gates after it need the disk (a rebase
    // that changed no file would carry the verdicts over and write nothing).
    w.gh.push_commit(REPO, "main", &[("README.md", "# widgets\n")], "Docs");
    w.llm.release();
    saw_full_disk(&w).await;
    tmpfs.free(&filler);
    let t = w.wait_state(TaskState::Completed).await;
    assert!(t.detail.unwrap_or_default().contains("auto-v"));
    w.assert_each_side_effect_once();
}
