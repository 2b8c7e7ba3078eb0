//! The sandboxes' disk limits with real containers and real loop-mounted disks: a command
//! filling the disk is killed with every process it started, a writer left running stops at
//! the worktree's own disk, inodes run out as bytes do, and nothing but the worktree and `/tmp`
//! is writable. Needs a Docker engine, the runner image, and (for the disks) root with loop
//! devices, as CI has.

use std::path::Path;
use std::time::Duration;

use vibeloop::sandbox::{Backend, Kind, Sandbox, disk};

use super::sandbox::{docker, spec, started, worktree};

fn free_bytes(path: &Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn a_command_filling_the_disk_is_killed_at_its_limit() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    const FILL: &str = "python3 -c \"\nimport itertools\nfor i in itertools.count():\n    \
        open(f'fill-{i}.bin', 'wb').write(bytes(4 << 20))\n\"";
    for kind in [Kind::Docker, Kind::Local] {
        let (backend, _) = Backend::detect(data.path(), Some(kind)).await.unwrap();
        let mut s = spec(wt.path(), &[]);
        s.disk_mb = 64;
        let sb = started(&backend, &s).await;
        let before = free_bytes(wt.path());
        let out = sb.exec(FILL, Duration::from_secs(120)).await.unwrap();
        assert_eq!(
            out.describe(),
            "killed: it wrote more than 64 MiB to disk (limits.disk_mb)",
            "{kind:?}: {out:?}"
        );
        assert!(!out.success());
        // It was stopped within a few polls of the limit: far from the two minutes it had.
        let taken = before.saturating_sub(free_bytes(wt.path()));
        assert!(taken < 2 << 30, "{kind:?}: {} MiB taken", taken >> 20);
        if kind == Kind::Docker {
            // Every process of the command is gone, not only the exec the guard stopped.
            let ps = "for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $p; echo; done";
            let ps = sb.exec(ps, Duration::from_secs(30)).await.unwrap();
            assert!(ps.success(), "{ps:?}");
            assert!(!ps.output.contains("itertools"), "left: {}", ps.output);
        }
        let next = sb.exec("rm -f fill-*.bin; echo ok", Duration::from_secs(30));
        let next = next.await.unwrap();
        assert!(next.success(), "{kind:?}: {next:?}");
        sb.stop().await;
    }
}

/// A worktree on a disk of its own, as the bot makes one when it runs as root (CI does), for
/// a checkout of one 4 KiB block; released when dropped.
struct OnDisk(std::path::PathBuf);

impl OnDisk {
    fn make(data: &Path, room_mb: u64) -> Self {
        let root = data.join("feat-T-1");
        disk::make(&root, disk::Size::for_checkout(4096, 2, room_mb)).unwrap_or_else(|e| {
            panic!("cannot make a disk (this test needs root and loop devices, as CI has): {e}")
        });
        let wt = root.join(disk::TREE);
        std::fs::create_dir(&wt).unwrap();
        std::fs::write(wt.join("main.py"), "print('hi')\n").unwrap();
        Self(wt)
    }
}

impl Drop for OnDisk {
    fn drop(&mut self) {
        let _ = disk::release(self.0.parent().unwrap());
    }
}

/// Waits until `path` exists in the sandbox, for at most a minute.
async fn wait_for_file(sb: &Sandbox, path: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let out = sb
            .exec(&format!("test -e {path}"), Duration::from_secs(10))
            .await
            .unwrap();
        if out.success() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} never appeared"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 42, part 4: a process a command leaves running writes on after the command returns,
/// setting each file's time back as `touch -d` does. The guard watches commands while they
/// run and trusts no time; the worktree's own disk stops the writer at the room it has.
#[tokio::test]
async fn a_writer_left_running_with_times_set_back_stops_at_the_worktrees_disk() {
    let data = tempfile::tempdir().unwrap();
    let on_disk = OnDisk::make(data.path(), 64);
    let wt = on_disk.0.clone();
    let backend = docker(data.path()).await;
    let mut s = spec(&wt, &[]);
    s.disk_mb = 64;
    let sb = started(&backend, &s).await;
    let leave = "setsid sh -c 'for i in 1 2 3 4 5 6; do head -c 32M /dev/zero > fill-$i.bin; \
                 touch -d 2000-01-01 fill-$i.bin; done; touch /tmp/done' \
                 </dev/null >/dev/null 2>&1 &";
    let out = sb.exec(leave, Duration::from_secs(30)).await.unwrap();
    assert!(out.success(), "{out:?}");
    wait_for_file(&sb, "/tmp/done").await;
    let written: u64 = std::fs::read_dir(&wt)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("fill-"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        written <= 64 << 20,
        "the writer left running wrote {} MiB",
        written >> 20
    );
    // The next command that meets the full disk is told why.
    let out = sb
        .exec("head -c 1M /dev/zero > more.bin", Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        out.describe(),
        "killed: the worktree's disk is full: its commands wrote 64 MiB (limits.disk_mb)",
        "{out:?}"
    );
    sb.stop().await;
    drop(on_disk);
    assert!(!wt.parent().unwrap().exists());
}

/// The disk's inodes are limited too: a million empty files take no block, but every inode.
#[tokio::test]
async fn empty_files_stop_at_the_worktrees_inodes() {
    let data = tempfile::tempdir().unwrap();
    let on_disk = OnDisk::make(data.path(), 16);
    let wt = on_disk.0.clone();
    let backend = docker(data.path()).await;
    let mut s = spec(&wt, &[]);
    s.disk_mb = 16;
    let sb = started(&backend, &s).await;
    let many = "python3 -c \"\nimport itertools\nfor i in itertools.count():\n    open(f'e-{i}', 'w').close()\n\"";
    let out = sb.exec(many, Duration::from_secs(120)).await.unwrap();
    assert_eq!(
        out.describe(),
        "killed: the worktree's disk has no file left: its commands made 4096 files (one per 4 KiB of limits.disk_mb)",
        "{out:?}"
    );
    let made = std::fs::read_dir(&wt).unwrap().count();
    assert!(made < 4096 + 100, "{made} files");
    sb.stop().await;
}

#[tokio::test]
async fn no_file_grows_past_the_disk_limit_and_only_the_worktree_and_tmp_are_writable() {
    let (data, wt) = (tempfile::tempdir().unwrap(), worktree());
    let backend = docker(data.path()).await;
    let mut s = spec(wt.path(), &[]);
    s.disk_mb = 16;
    let sb = started(&backend, &s).await;
    // Two walls stand at 16 MiB: the file-size limit (Python ignores SIGXFSZ and gets EFBIG;
    // most programs are killed by it) and the watcher of what a command takes from the disk.
    // Whichever a write meets first stops it; on a busy machine the watcher can poll between
    // the write and the exit. Either way, no file is left past the limit (checked below).
    let stopped = |out: &vibeloop::sandbox::CommandOutput, by_size: Option<&str>| {
        by_size.is_some_and(|e| out.output.contains(e))
            || out.describe() == "killed: a file grew past 16 MiB (limits.disk_mb)"
            || out.describe() == "killed: it wrote more than 16 MiB to disk (limits.disk_mb)"
    };
    let big = "python3 -c \"open('big.bin', 'wb').write(bytes(32 << 20))\"";
    let out = sb.exec(big, Duration::from_secs(60)).await.unwrap();
    assert!(stopped(&out, Some("File too large")), "{out:?}");
    let out = sb
        .exec("head -c 32M /dev/zero > big2.bin", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(!out.success() && stopped(&out, None), "{out:?}");
    for f in ["big.bin", "big2.bin"] {
        let size = std::fs::metadata(wt.path().join(f)).unwrap().len();
        assert!(size <= 16 << 20, "{f}: {size}");
    }
    let out = sb
        .exec(
            "touch /usr/x 2>&1; touch /home/x 2>&1; echo tmp > /tmp/x && cat /tmp/x",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert_eq!(
        out.output.matches("Read-only file system").count(),
        2,
        "{}",
        out.output
    );
    assert!(out.output.ends_with("tmp\n"), "{}", out.output);
    sb.stop().await;
}
