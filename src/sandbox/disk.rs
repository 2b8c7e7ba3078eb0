//! A worktree's own disk: a sparse ext4 image, mounted by loop, holding the worktree and its
//! sandboxes' writable layers, so nothing written there takes more of the bot's disk than
//! the checkout plus `limits.disk_mb`.
//!
//! The disk guard ([`super::guard`]) watches a command while it runs; a file system of fixed
//! size is a limit code cannot step around: not by setting file times back, not from a
//! process left running between commands, not with a million empty files (its inodes are
//! counted too: the checkout's plus one per 4 KiB of the room, as the guard allows).
//!
//! Mounting needs root (or `CAP_SYS_ADMIN`) and loop devices. Where the bot has neither,
//! [`probe`] says why, the worktree is a plain directory and the guard alone watches;
//! `vibeloop doctor` shows which.
//!
//! Layout, for a worktree of branch `b`: `…/b.disk` (the image), `…/b/` (its mount),
//! `…/b/tree` (the worktree), `…/b/layers` (writable layers of its sandboxes).

use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The worktree's directory inside its disk.
pub const TREE: &str = "tree";
/// Where the sandboxes of a worktree keep their writable layers, on its disk.
const LAYERS: &str = "layers";
/// An inode's size on the disk: ext4's default for small file systems is 128 bytes, but
/// 256 keeps nanosecond times; a sized table, part of the overhead.
const INODE_BYTES: u64 = 256;
/// What the file system itself takes beyond inodes, at least: group descriptors, bitmaps,
/// the root; with a 32nd of the free space, more than ext4 needs at any size.
const OVERHEAD: u64 = 16 << 20;
/// The file on a disk's root that takes the space the slack left, so that what is free is
/// the room asked for. Outside the worktree: no sandbox sees it.
const RESERVED: &str = "reserved";
/// Free space under which a disk counts as full: less than a few blocks of a file.
const FULL: u64 = 1 << 20;

/// How big a disk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// The image: room, inodes and the file system's own blocks, with slack.
    pub bytes: u64,
    pub inodes: u64,
    /// The space free for files once it is made: the checkout and the room, exactly (what
    /// the slack left over is taken by a reserved file outside the worktree).
    pub free: u64,
}

impl Size {
    /// A disk for a checkout of `files` files and directories taking `bytes` (file sizes
    /// rounded up to 4 KiB blocks), with `room_mb` MiB and one inode per 4 KiB of it free.
    pub fn for_checkout(bytes: u64, files: u64, room_mb: u64) -> Self {
        let room = room_mb.saturating_mul(1 << 20);
        let inodes = files
            .saturating_add(files_limit(room_mb))
            .saturating_add(64);
        let free = bytes.saturating_add(room);
        Self {
            bytes: free
                .saturating_add(inodes.saturating_mul(INODE_BYTES))
                .saturating_add(free / 32)
                .saturating_add(OVERHEAD),
            inodes,
            free,
        }
    }
}

/// The image of the disk mounted at `root`.
fn image_of(root: &Path) -> PathBuf {
    let mut name = root.file_name().unwrap_or_default().to_os_string();
    name.push(".disk");
    root.with_file_name(name)
}

/// Makes a disk of `size` and mounts it at `root` (made, empty). The mount is `nosuid` and
/// `nodev`; the disk's root is the bot's.
pub fn make(root: &Path, size: Size) -> io::Result<()> {
    std::fs::create_dir_all(root)?;
    let image = image_of(root);
    let file = std::fs::File::create(&image)?;
    file.set_len(size.bytes)?;
    drop(file);
    let made = run(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-m", "0", "-O", "^has_journal", "-I"])
        .arg(INODE_BYTES.to_string())
        .arg("-N")
        .arg(size.inodes.to_string())
        .args(["-E", "lazy_itable_init=1,nodiscard"])
        .arg(&image))
    .and_then(|()| {
        run(Command::new("mount")
            // `noinit_itable`: the inode tables of a new sparse image read as zeros already;
            // the kernel need not write them (that would take blocks of the bot's disk).
            // No `discard`: it makes every delete a hole punched in the image; what a
            // worktree deleted stays taken in it (never more than its size) until it goes.
            .args(["-o", "loop,nosuid,nodev,noatime,noinit_itable"])
            .arg(&image)
            .arg(root))
    });
    if let Err(e) = made {
        let _ = std::fs::remove_file(&image);
        return Err(e);
    }
    // `lost+found` is mkfs's, of no use here: the disk holds nothing to recover.
    let _ = std::fs::remove_dir(root.join("lost+found"));
    if let Err(e) = reserve(root, size.free) {
        let _ = release(root);
        return Err(e);
    }
    Ok(())
}

/// Takes what is free on the disk at `root` beyond `free` bytes with a file of allocated,
/// never written, blocks (the image stays sparse).
fn reserve(root: &Path, free: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let avail = available(root)
        .ok_or_else(|| io::Error::other("cannot read the new disk's free space"))?
        .bytes;
    let extra = avail.saturating_sub(free);
    if extra == 0 {
        return Ok(());
    }
    let file = std::fs::File::create(root.join(RESERVED))?;
    let len = libc::off_t::try_from(extra).map_err(io::Error::other)?;
    // SAFETY: a valid open file descriptor, and a non-negative length.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Unmounts the disk at `root`, if there is one, and removes its image and `root`'s
/// contents. The files go first: what is deleted is never written back, so the unmount has
/// next to nothing to flush into the image. The disk is detached, never waited for: the
/// kernel frees it when its last user (a container still stopping) goes.
pub fn release(root: &Path) -> io::Result<()> {
    if is_mount(root) {
        for entry in std::fs::read_dir(root)?.flatten() {
            let path = entry.path();
            let _ = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
        // Detached at once: an unmount that waits for the image to be written (a full data
        // disk, a slow one) must never hold the bot; the kernel finishes it.
        run(Command::new("umount").arg("-l").arg(root))?;
    }
    let image = image_of(root);
    if image.exists() {
        std::fs::remove_file(&image)?;
    }
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    Ok(())
}

/// Releases every worktree disk mounted under `dir` (a repository's worktrees, a data
/// directory); how many.
pub fn release_all(dir: &Path) -> io::Result<usize> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mut released = 0;
    // The fifth field is the mount point, with space, tab, newline and backslash in octal.
    for point in mounts.lines().filter_map(|l| l.split(' ').nth(4)) {
        let point = PathBuf::from(unescape(point));
        if point.starts_with(dir) && image_of(&point).is_file() {
            release(&point)?;
            released += 1;
        }
    }
    Ok(released)
}

fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The mount of `worktree`'s own disk, when it has one.
fn disk_of(worktree: &Path) -> Option<&Path> {
    let root = worktree.parent()?;
    (worktree.file_name()? == TREE && is_mount(root)).then_some(root)
}

/// Where the sandboxes of `worktree` keep their writable layers: on its disk when it has
/// one, else `None` (the backend's own place).
pub fn layers_of(worktree: &Path) -> Option<PathBuf> {
    disk_of(worktree).map(|root| root.join(LAYERS))
}

/// Whether `path` (a worktree, or a layer of its sandboxes) lies on a worktree's own disk.
pub fn is_on_disk(path: &Path) -> bool {
    path.ancestors()
        .take_while(|p| p.file_name().is_some())
        .any(|p| image_of(p).is_file() && is_mount(p))
}

/// Why a command that failed in `worktree` was stopped by its disk, if it was: the disk is
/// full (`room_mb` MiB written), or out of inodes.
pub fn filled(worktree: &Path, room_mb: u64) -> Option<String> {
    let free = available(disk_of(worktree)?)?;
    if free.inodes < 8 {
        return Some(format!(
            "the worktree's disk has no file left: its commands made {} files (one per 4 KiB of limits.disk_mb)",
            files_limit(room_mb)
        ));
    }
    (free.bytes < FULL).then(|| {
        format!("the worktree's disk is full: its commands wrote {room_mb} MiB (limits.disk_mb)")
    })
}

/// Whether `worktree`'s disk still has half of `room_mb` free, in bytes and in files: room
/// for a second run like the one before, at most the first's size. A worktree without a disk
/// of its own always has; a disk that cannot be read has not.
pub fn has_half_room(worktree: &Path, room_mb: u64) -> bool {
    let Some(root) = disk_of(worktree) else {
        return true;
    };
    available(root).is_some_and(|free| {
        free.bytes >= room_mb.saturating_mul(1 << 19) && free.inodes >= files_limit(room_mb) / 2
    })
}

/// Whether `dir` is a mount point: it lies on another device than its parent.
fn is_mount(dir: &Path) -> bool {
    let (Ok(me), Some(Ok(parent))) = (std::fs::metadata(dir), dir.parent().map(std::fs::metadata))
    else {
        return false;
    };
    me.dev() != parent.dev()
}

/// Whether this process can make disks in `dir`: a tiny one is made, written and released.
/// `Err` says why not, in words for `vibeloop doctor` and the log.
pub fn probe(dir: &Path) -> Result<(), String> {
    let root = dir.join(format!(".disk-probe-{}", std::process::id()));
    let tried = make(&root, Size::for_checkout(0, 0, 1)).and_then(|()| {
        std::fs::write(root.join("probe"), b"ok")?;
        if is_mount(&root) {
            Ok(())
        } else {
            Err(io::Error::other("the image was not mounted"))
        }
    });
    let _ = release(&root);
    tried.map_err(|e| format!("no disk per worktree ({e}): the disk guard alone limits what sandboxes write; run the bot as root with loop devices for a hard limit"))
}

/// The files a command may make for a disk limit of `limit_mb` MiB: one per 4 KiB.
pub fn files_limit(limit_mb: u64) -> u64 {
    limit_mb.saturating_mul(256)
}

/// Free space on a file system: bytes, and inodes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Free {
    pub(super) bytes: u64,
    pub(super) inodes: u64,
}

/// Bytes and inodes an unprivileged process may still take on the file system of `path`.
pub(super) fn available(path: &Path) -> Option<Free> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `stat` a properly sized out-parameter.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut stat) };
    (rc == 0).then(|| Free {
        bytes: (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64),
        inodes: stat.f_favail as u64,
    })
}

fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.stdin(std::process::Stdio::null()).output()?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(io::Error::other(format!(
        "{} failed: {}",
        cmd.get_program().to_string_lossy(),
        said.trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_holds_the_checkout_and_the_room_with_inodes_to_match() {
        let size = Size::for_checkout(10 << 20, 100, 64);
        assert_eq!(size.inodes, 100 + 64 * 256 + 64);
        assert_eq!(size.free, 74 << 20);
        let slack = size.bytes - size.free - size.inodes * INODE_BYTES;
        assert_eq!(slack, OVERHEAD + (74 << 20) / 32);
    }

    #[test]
    fn mount_points_are_read_as_the_kernel_escapes_them() {
        assert_eq!(unescape("/d/a\\040b/c"), "/d/a b/c");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn the_image_sits_beside_its_mount() {
        assert_eq!(
            image_of(Path::new("/d/worktrees/acme/demo/feat-T-1")),
            Path::new("/d/worktrees/acme/demo/feat-T-1.disk")
        );
    }

    #[test]
    fn a_plain_directory_has_no_layers_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join(TREE);
        std::fs::create_dir(&tree).unwrap();
        assert_eq!(layers_of(&tree), None);
        assert!(!is_mount(dir.path()));
        assert!(
            has_half_room(&tree, 64),
            "no disk of its own: the host's room"
        );
    }
}
