//! The disk guard: while a command runs, it watches the free space of the file system holding
//! the worktree (the bot's data directory) and trips when the command's writes take more than
//! its limit (`limits.disk_mb`) or leave that disk nearly full. A repository whose tests fill
//! the disk must not fill the bot's: the sandbox kills the command and says why.
//!
//! Free space is all it reads, so it cannot tell whose writes took it: on a busy disk, other
//! writers count against the command too. A per-worktree quota (XFS project quotas) would be
//! exact; this needs no file-system setup and errs on the side of the bot's disk.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often free space is read (one `statvfs`, a few microseconds): at the ~1 GB/s a command
/// can write into the page cache, a poll lets some 50 MiB through.
const POLL: Duration = Duration::from_millis(50);
/// Free space the guard keeps for the bot: a command that is writing is stopped below it.
const RESERVE: u64 = 256 << 20;
/// Writes smaller than this never trip the reserve (the disk was nearly full before).
const NOISE: u64 = 16 << 20;

/// Watches one command's disk use.
pub struct DiskGuard {
    path: PathBuf,
    limit: u64,
    start: u64,
}

impl DiskGuard {
    /// Starts watching the file system of `path` for writes of more than `limit_mb` MiB; `None`
    /// when its free space cannot be read.
    pub fn new(path: &Path, limit_mb: u64) -> Option<Self> {
        let start = available(path)?;
        Some(Self {
            path: path.to_owned(),
            limit: limit_mb.saturating_mul(1 << 20),
            start,
        })
    }

    /// Waits until the command has taken too much; says what, for people.
    pub async fn tripped(&self) -> String {
        loop {
            tokio::time::sleep(POLL).await;
            let Some(now) = available(&self.path) else {
                continue;
            };
            if let Some(why) = self.verdict(now) {
                return why;
            }
        }
    }

    /// Why `available` bytes left means the command must stop, if it does.
    fn verdict(&self, available: u64) -> Option<String> {
        let taken = self.start.saturating_sub(available);
        if taken > self.limit {
            return Some(format!(
                "it wrote more than {} MiB to disk (limits.disk_mb)",
                self.limit >> 20
            ));
        }
        (available < RESERVE && taken > NOISE).then(|| {
            format!(
                "the bot's disk is nearly full ({} MiB left) and it kept writing",
                available >> 20
            )
        })
    }
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

    fn guard(limit_mb: u64, start_mb: u64) -> DiskGuard {
        DiskGuard {
            path: PathBuf::from("/"),
            limit: limit_mb << 20,
            start: start_mb << 20,
        }
    }

    #[test]
    fn it_trips_past_the_limit_or_near_a_full_disk() {
        let g = guard(100, 10_000);
        assert_eq!(g.verdict(9_950 << 20), None);
        assert!(
            g.verdict(9_899 << 20)
                .unwrap()
                .contains("more than 100 MiB")
        );
        // Nearly full, but the command wrote next to nothing: it goes on.
        let g = guard(100, 200);
        assert_eq!(g.verdict(195 << 20), None);
        assert!(g.verdict(150 << 20).unwrap().contains("nearly full"));
    }

    #[test]
    fn free_space_is_read() {
        assert!(DiskGuard::new(Path::new("/"), 1).is_some());
        assert!(DiskGuard::new(Path::new("/no/such/dir"), 1).is_none());
    }
}
