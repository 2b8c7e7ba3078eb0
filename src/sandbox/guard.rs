//! The disk guard: while a command runs, it watches what the command writes where it may write
//! (the worktree and the environment's cache) and trips when that passes its limit
//! (`limits.disk_mb`), or when the command keeps writing with the bot's disk nearly full. A
//! repository whose tests fill the disk must not fill the bot's: the sandbox kills the command
//! and says why.
//!
//! Two readings, one cheap and one exact. Free space (one `statvfs`) is read every poll; it
//! cannot tell whose writes took it, so a drop past the limit only wakes the exact reading: a
//! walk of the writable roots summing the blocks of the files changed since the command
//! started. Other writers on the same disk — another ticket's build, a test suite next door —
//! therefore never stop a command; only its own writes do.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How often free space is read (a few microseconds): at the ~1 GB/s a command can write into
/// the page cache, a poll lets some 50 MiB through.
const POLL: Duration = Duration::from_millis(50);
/// Free space the guard keeps for the bot: a command that is writing is stopped below it.
const RESERVE: u64 = 256 << 20;
/// Writes smaller than this never trip the reserve (the disk was nearly full before).
const NOISE: u64 = 16 << 20;
/// The least time between two walks while someone else's writes keep the trigger on.
const WALK_GAP: Duration = Duration::from_millis(500);

/// Watches one command's disk use.
pub struct DiskGuard {
    roots: Vec<PathBuf>,
    limit: u64,
    /// When the command started: files changed since are its writes.
    since: SystemTime,
    /// Free bytes on each root's file system when it started.
    free_at_start: Vec<u64>,
}

impl DiskGuard {
    /// Starts watching `roots` (the places a command may write) for writes of more than
    /// `limit_mb` MiB; `None` when the free space of one of them cannot be read.
    pub fn new(roots: Vec<PathBuf>, limit_mb: u64) -> Option<Self> {
        let free_at_start = roots
            .iter()
            .map(|r| available(r))
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            roots,
            limit: limit_mb.saturating_mul(1 << 20),
            // File times come from a coarse clock (a tick or so behind this one).
            since: SystemTime::now() - Duration::from_millis(20),
            free_at_start,
        })
    }

    /// Waits until the command has taken too much; says what, for people.
    pub async fn tripped(&self) -> String {
        let mut next_walk = Instant::now();
        loop {
            tokio::time::sleep(POLL).await;
            let Some((dropped, least_free)) = self.free_space() else {
                continue;
            };
            let suspect = dropped > self.limit || (least_free < RESERVE && dropped > NOISE);
            if !suspect || Instant::now() < next_walk {
                continue;
            }
            let (roots, since) = (self.roots.clone(), self.since);
            let walked = Instant::now();
            let written = tokio::task::spawn_blocking(move || written_since(&roots, since))
                .await
                .unwrap_or(0);
            if let Some(why) = self.verdict(written, least_free) {
                return why;
            }
            // Someone else is writing: walk again later, never more than a tenth of the time.
            next_walk = Instant::now() + WALK_GAP.max(walked.elapsed() * 10);
        }
    }

    /// The largest drop of free space on the roots' file systems since the start, and the
    /// least free space left on them.
    fn free_space(&self) -> Option<(u64, u64)> {
        let mut dropped = 0;
        let mut least = u64::MAX;
        for (root, start) in self.roots.iter().zip(&self.free_at_start) {
            let now = available(root)?;
            dropped = dropped.max(start.saturating_sub(now));
            least = least.min(now);
        }
        Some((dropped, least))
    }

    /// Why a command that has `written` bytes, with `available` bytes left, must stop, if it
    /// must.
    fn verdict(&self, written: u64, available: u64) -> Option<String> {
        if written > self.limit {
            return Some(format!(
                "it wrote more than {} MiB to disk (limits.disk_mb)",
                self.limit >> 20
            ));
        }
        (available < RESERVE && written > NOISE).then(|| {
            format!(
                "the bot's disk is nearly full ({} MiB left) and it kept writing",
                available >> 20
            )
        })
    }
}

/// Bytes on disk of the files under `roots` changed at or after `since` (symbolic links are
/// not followed; what cannot be read counts nothing).
fn written_since(roots: &[PathBuf], since: SystemTime) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = 0u64;
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() && meta.modified().is_ok_and(|m| m >= since) {
                total = total.saturating_add(meta.blocks().saturating_mul(512));
            }
        }
    }
    total
}

/// Bytes an unprivileged process may still write on the file system of `path`.
fn available(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `stat` a properly sized out-parameter.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut stat) };
    (rc == 0).then(|| (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_trips_past_the_limit_or_when_writing_to_a_nearly_full_disk() {
        let g = DiskGuard::new(vec![PathBuf::from("/")], 100).unwrap();
        assert_eq!(g.verdict(50 << 20, 10_000 << 20), None);
        let why = g.verdict(101 << 20, 10_000 << 20).unwrap();
        assert!(why.contains("more than 100 MiB"), "{why}");
        // Nearly full, but the command wrote next to nothing: it goes on.
        assert_eq!(g.verdict(1 << 20, 100 << 20), None);
        let why = g.verdict(50 << 20, 100 << 20).unwrap();
        assert!(why.contains("nearly full (100 MiB left)"), "{why}");
    }

    #[test]
    fn only_files_changed_since_the_start_count_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::fs::File::create(dir.path().join("old.bin")).unwrap();
        std::io::Write::write_all(&mut &old, &vec![1u8; 1 << 20]).unwrap();
        old.set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let since = SystemTime::now() - Duration::from_secs(1);
        std::fs::write(dir.path().join("sub/new.bin"), vec![1u8; 2 << 20]).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("link")).unwrap();
        let written = written_since(&[dir.path().to_owned()], since);
        assert!(
            (2 << 20..3 << 20).contains(&written),
            "{written} bytes counted"
        );
    }

    fn write_mib(path: &Path, mib: usize) {
        let f = std::fs::File::create(path).unwrap();
        std::io::Write::write_all(&mut &f, &vec![7u8; mib << 20]).unwrap();
        f.sync_all().unwrap();
    }

    #[tokio::test]
    async fn a_neighbours_writes_on_the_same_disk_do_not_trip_it_and_its_own_do() {
        let disk = tempfile::tempdir().unwrap();
        let (root, next_door) = (disk.path().join("worktree"), disk.path().join("next-door"));
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&next_door).unwrap();
        let guard = DiskGuard::new(vec![root.clone()], 16).unwrap();
        // 64 MiB written next door: free space drops four times past the limit, the walk
        // finds nothing of the command's, and the guard keeps still.
        write_mib(&next_door.join("big.bin"), 64);
        let quiet = tokio::time::timeout(Duration::from_millis(1500), guard.tripped()).await;
        assert!(quiet.is_err(), "tripped by a neighbour: {quiet:?}");
        write_mib(&root.join("own.bin"), 32);
        let why = tokio::time::timeout(Duration::from_secs(30), guard.tripped())
            .await
            .expect("its own 32 MiB trip it");
        assert_eq!(why, "it wrote more than 16 MiB to disk (limits.disk_mb)");
    }

    #[test]
    fn free_space_is_read() {
        assert!(DiskGuard::new(vec![PathBuf::from("/")], 1).is_some());
        assert!(DiskGuard::new(vec![PathBuf::from("/no/such/dir")], 1).is_none());
    }
}
