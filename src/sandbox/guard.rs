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
//!
//! Files count as well as bytes: a million empty files take no block but every inode of the
//! bot's disk. A command may make as many files as its disk limit holds 4 KiB blocks
//! ([`files_limit`](super::disk::files_limit)); free inodes are read as cheaply as free space, and a drop past that wakes
//! the same walk.

use std::path::PathBuf;

use super::disk::{Free, available, files_limit};
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

/// Free inodes the guard keeps for the bot.
const INODE_RESERVE: u64 = 20_000;

/// Watches one command's disk use.
pub struct DiskGuard {
    roots: Vec<PathBuf>,
    limit: u64,
    files: u64,
    /// When the command started: files changed since are its writes.
    since: SystemTime,
    /// Free bytes and inodes on each root's file system when it started.
    free_at_start: Vec<Free>,
}

/// What the walk found the command wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Written {
    bytes: u64,
    files: u64,
}

impl DiskGuard {
    /// Starts watching `roots` (the places a command may write) for writes of more than
    /// `limit_mb` MiB; `None` when the free space of one of them cannot be read.
    pub fn new(roots: Vec<PathBuf>, limit_mb: u64) -> Option<Self> {
        // A worktree's own disk is its limit already, and never the bot's disk: not watched.
        let roots: Vec<PathBuf> = roots
            .into_iter()
            .filter(|r| !super::disk::is_on_disk(r))
            .collect();
        if roots.is_empty() {
            return None;
        }
        let free_at_start = roots
            .iter()
            .map(|r| available(r))
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            roots,
            limit: limit_mb.saturating_mul(1 << 20),
            files: files_limit(limit_mb),
            since: started_now(),
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
            let suspect = dropped.bytes > self.limit
                || dropped.inodes > self.files
                || (least_free.bytes < RESERVE && dropped.bytes > NOISE)
                || (least_free.inodes < INODE_RESERVE && dropped.inodes > INODE_RESERVE / 4);
            if !suspect || Instant::now() < next_walk {
                continue;
            }
            let (roots, since) = (self.roots.clone(), self.since);
            let walked = Instant::now();
            let written = tokio::task::spawn_blocking(move || written_since(&roots, since))
                .await
                .unwrap_or_default();
            if let Some(why) = self.verdict(written, least_free) {
                return why;
            }
            // Someone else is writing: walk again later, never more than a tenth of the time.
            next_walk = Instant::now() + WALK_GAP.max(walked.elapsed() * 10);
        }
    }

    /// The largest drops of free space and inodes on the roots' file systems since the
    /// start, and the least of each left on them.
    fn free_space(&self) -> Option<(Free, Free)> {
        let mut dropped = Free {
            bytes: 0,
            inodes: 0,
        };
        let mut least = Free {
            bytes: u64::MAX,
            inodes: u64::MAX,
        };
        for (root, start) in self.roots.iter().zip(&self.free_at_start) {
            let now = available(root)?;
            dropped.bytes = dropped.bytes.max(start.bytes.saturating_sub(now.bytes));
            dropped.inodes = dropped.inodes.max(start.inodes.saturating_sub(now.inodes));
            least.bytes = least.bytes.min(now.bytes);
            least.inodes = least.inodes.min(now.inodes);
        }
        Some((dropped, least))
    }

    /// Why a command that has `written` this much, with `left` free, must stop, if it must.
    fn verdict(&self, written: Written, left: Free) -> Option<String> {
        if written.bytes > self.limit {
            return Some(format!(
                "it wrote more than {} MiB to disk (limits.disk_mb)",
                self.limit >> 20
            ));
        }
        if written.files > self.files {
            return Some(format!(
                "it made more than {} files (one per 4 KiB of limits.disk_mb)",
                self.files
            ));
        }
        if left.bytes < RESERVE && written.bytes > NOISE {
            return Some(format!(
                "the bot's disk is nearly full ({} MiB left) and it kept writing",
                left.bytes >> 20
            ));
        }
        (left.inodes < INODE_RESERVE && written.files > INODE_RESERVE / 4).then(|| {
            format!(
                "the bot's disk is nearly out of inodes ({} left) and it kept making files",
                left.inodes
            )
        })
    }
}

/// Bytes on disk of the files under `roots` changed at or after `since`, and how many entries
/// (files, directories, links) were changed or made since (symbolic links are not followed;
/// what cannot be read counts nothing).
fn written_since(roots: &[PathBuf], since: SystemTime) -> Written {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = Written::default();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            // The change time, which the kernel sets on every write and no call can set back
            // (`touch -d` moves the modification time, and this one to now).
            let new = changed_at(&meta) >= since;
            if new {
                total.files += 1;
            }
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() && new {
                total.bytes = total
                    .bytes
                    .saturating_add(meta.blocks().saturating_mul(512));
            }
        }
    }
    total
}

/// File times come from a coarse clock (a tick or so behind this one).
const CLOCK_SLACK: Duration = Duration::from_millis(20);

/// The start of a command as file times will compare with it.
fn started_now() -> SystemTime {
    SystemTime::now() - CLOCK_SLACK
}

/// When `meta`'s inode last changed (its content, or its metadata).
fn changed_at(meta: &std::fs::Metadata) -> SystemTime {
    use std::os::unix::fs::MetadataExt as _;
    let (secs, nanos) = (meta.ctime(), meta.ctime_nsec());
    match (u64::try_from(secs), u32::try_from(nanos)) {
        (Ok(s), Ok(n)) => SystemTime::UNIX_EPOCH + Duration::new(s, n),
        _ => SystemTime::UNIX_EPOCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_trips_past_the_limit_or_when_writing_to_a_nearly_full_disk() {
        let g = DiskGuard::new(vec![PathBuf::from("/")], 100).unwrap();
        let w = |bytes: u64, files: u64| Written { bytes, files };
        let left = |bytes: u64, inodes: u64| Free { bytes, inodes };
        let roomy = left(10_000 << 20, 1 << 30);
        assert_eq!(g.verdict(w(50 << 20, 10), roomy), None);
        let why = g.verdict(w(101 << 20, 10), roomy).unwrap();
        assert!(why.contains("more than 100 MiB"), "{why}");
        // Nearly full, but the command wrote next to nothing: it goes on.
        assert_eq!(g.verdict(w(1 << 20, 10), left(100 << 20, 1 << 30)), None);
        let why = g
            .verdict(w(50 << 20, 10), left(100 << 20, 1 << 30))
            .unwrap();
        assert!(why.contains("nearly full (100 MiB left)"), "{why}");
        // Empty files take no byte, but every inode.
        let why = g.verdict(w(0, 25_601), roomy).unwrap();
        assert_eq!(
            why,
            "it made more than 25600 files (one per 4 KiB of limits.disk_mb)"
        );
        let why = g.verdict(w(0, 10_000), left(1 << 30, 1_000)).unwrap();
        assert!(why.contains("nearly out of inodes (1000 left)"), "{why}");
    }

    #[test]
    fn only_files_changed_since_the_start_count_as_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.bin"), vec![1u8; 1 << 20]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        // The command starts once the files before it are older than its start, slack included.
        let before = changed_at(&std::fs::metadata(dir.path().join("sub")).unwrap());
        let deadline = Instant::now() + Duration::from_secs(5);
        while started_now() <= before {
            assert!(Instant::now() < deadline, "the clock does not move");
            std::thread::yield_now();
        }
        let since = started_now();
        std::fs::write(dir.path().join("sub/new.bin"), vec![1u8; 2 << 20]).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("link")).unwrap();
        let written = written_since(&[dir.path().to_owned()], since);
        assert!(
            (2 << 20..3 << 20).contains(&written.bytes),
            "{written:?} counted"
        );
        // `sub` (its content changed), `sub/new.bin` and the link were made or changed since.
        assert_eq!(written.files, 3, "{written:?}");
    }

    /// What `touch -d 2000-01-01` does after each write: the modification time goes back, the
    /// writes stay counted (issue 42, part 4).
    #[test]
    fn a_write_whose_time_is_set_back_still_counts() {
        let dir = tempfile::tempdir().unwrap();
        let since = started_now();
        for i in 0..3 {
            let f = std::fs::File::create(dir.path().join(format!("hidden-{i}.bin"))).unwrap();
            std::io::Write::write_all(&mut &f, &vec![1u8; 1 << 20]).unwrap();
            f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(946_684_800))
                .unwrap();
        }
        let written = written_since(&[dir.path().to_owned()], since);
        assert!(written.bytes >= 3 << 20, "{written:?}");
        assert_eq!(written.files, 3, "{written:?}");
    }

    fn write_mib(path: &std::path::Path, mib: usize) {
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
