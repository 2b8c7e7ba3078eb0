//! Reading, on the host, files a sandbox may have written: a worktree after a role's or a
//! gate's commands ran in it is the model's, not the bot's. A read goes through no symbolic
//! link (at any depth), opens only a regular file (never a FIFO, a device or a socket, which
//! would block or never end), and stops at a size cap; each refusal names the path and why,
//! so a hostile tree makes an error, not a hang or an out-of-memory loop.

use std::io::Read as _;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};

/// Manifests, lockfiles, configs, reports: what the bot reads of a worktree is small.
pub const DEFAULT_CAP: u64 = 16 << 20;

/// Why a file of a worktree was not read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("{path}: not a plain path inside the worktree")]
    NotInside { path: String },
    #[error("{path}: passes through a symbolic link")]
    Link { path: String },
    #[error("{path}: not a regular file ({kind})")]
    Special { path: String, kind: &'static str },
    #[error("{path}: larger than {cap} bytes")]
    TooLarge { path: String, cap: u64 },
    #[error("{path}: {why}")]
    Io { path: String, why: String },
}

impl Refused {
    /// The file was simply not there.
    pub fn is_missing(&self) -> bool {
        matches!(self, Refused::Io { why, .. } if why == "missing")
    }
}

/// `root/rel`, checked to be reached without any symbolic link; `Ok(None)` when it is not
/// there.
pub fn resolve(root: &Path, rel: &str) -> Result<Option<PathBuf>, Refused> {
    let rel_path = Path::new(rel);
    let plain = rel_path
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if rel.is_empty() || !plain {
        return Err(Refused::NotInside { path: rel.into() });
    }
    let mut path = root.to_path_buf();
    for part in rel_path.components() {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Refused::Link { path: rel.into() });
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(Refused::Io {
                    path: rel.into(),
                    why: e.to_string(),
                });
            }
        }
    }
    Ok(Some(path))
}

/// The bytes of `root/rel`, read as this module's doc says, at most `cap` of them. The path is
/// walked one directory at a time with `openat` and `O_NOFOLLOW`, so a link swapped in while
/// the bot reads is not followed either.
pub fn read(root: &Path, rel: &str, cap: u64) -> Result<Vec<u8>, Refused> {
    let io = |e: std::io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => Refused::Link { path: rel.into() },
        Some(libc::ENOENT) => Refused::Io {
            path: rel.into(),
            why: "missing".into(),
        },
        _ => Refused::Io {
            path: rel.into(),
            why: e.to_string(),
        },
    };
    let parts: Vec<&std::ffi::OsStr> = Path::new(rel)
        .components()
        .map(|c| match c {
            Component::Normal(p) => Ok(p),
            _ => Err(Refused::NotInside { path: rel.into() }),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, dirs)) = parts.split_last() else {
        return Err(Refused::NotInside { path: rel.into() });
    };
    let mut dir = open_at(None, root.as_os_str(), libc::O_DIRECTORY).map_err(io)?;
    for d in dirs {
        dir = open_at(Some(&dir), d, libc::O_DIRECTORY | libc::O_NOFOLLOW).map_err(io)?;
    }
    // No waiting on a FIFO's writer, no controlling terminal.
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let file = std::fs::File::from(open_at(Some(&dir), last, flags).map_err(io)?);
    let meta = file.metadata().map_err(io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        use std::os::unix::fs::FileTypeExt as _;
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(Refused::Special {
            path: rel.into(),
            kind,
        });
    }
    if meta.len() > cap {
        return Err(Refused::TooLarge {
            path: rel.into(),
            cap,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::TooLarge {
            path: rel.into(),
            cap,
        });
    }
    Ok(bytes)
}

fn open_at(
    dir: Option<&OwnedFd>,
    name: &std::ffi::OsStr,
    flags: libc::c_int,
) -> std::io::Result<OwnedFd> {
    let name = std::ffi::CString::new(name.as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `dirfd` is AT_FDCWD or an open directory; `name` is NUL-terminated.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`read`] as text (lossy), `None` when the file is missing.
pub fn read_text(root: &Path, rel: &str, cap: u64) -> Result<Option<String>, Refused> {
    match read(root, rel, cap) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The special files under `root` — FIFOs, sockets, devices — as paths relative to it, at most
/// `limit` of them; the root's `.git` is not entered (it is the bot's, checked apart). Only the
/// directory entries' types are read (no file is opened, no link followed), so a tree made by
/// a sandbox cannot block the walk. Git tracks none of these kinds: one in a worktree was made
/// there by a program, and opening it (a `.gitignore` that is a FIFO) would block the bot.
pub fn special_files(root: &Path, limit: usize) -> std::io::Result<Vec<String>> {
    use std::os::unix::fs::FileTypeExt as _;
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in std::fs::read_dir(root.join(&rel))? {
            let entry = entry?;
            let at = rel.join(entry.file_name());
            if rel.as_os_str().is_empty() && entry.file_name() == ".git" {
                continue;
            }
            let ft = entry.file_type()?;
            if ft.is_dir() {
                dirs.push(at);
            } else if ft.is_fifo() || ft.is_socket() || ft.is_block_device() || ft.is_char_device()
            {
                let kind = if ft.is_fifo() {
                    "a FIFO"
                } else if ft.is_socket() {
                    "a socket"
                } else {
                    "a device"
                };
                found.push(format!("{} ({kind})", at.display()));
                if found.len() >= limit {
                    return Ok(found);
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_special_files_and_huge_files_are_refused_with_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("ok.toml"), "a = 1\n").unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.lock")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        std::fs::write(root.join("big.json"), vec![b'x'; 2048]).unwrap();
        let fifo = std::ffi::CString::new(root.join("pipe.txt").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

        assert_eq!(read(root, "ok.toml", 100).unwrap(), b"a = 1\n");
        assert_eq!(
            read(root, "zero.lock", 100).unwrap_err().to_string(),
            "zero.lock: passes through a symbolic link"
        );
        assert_eq!(
            read(root, "etc/passwd", 100).unwrap_err(),
            Refused::Link {
                path: "etc/passwd".into()
            }
        );
        assert_eq!(
            read(root, "pipe.txt", 100).unwrap_err().to_string(),
            "pipe.txt: not a regular file (a FIFO)"
        );
        assert_eq!(
            read(root, "d", 100).unwrap_err().to_string(),
            "d: not a regular file (a directory)"
        );
        assert_eq!(
            read(root, "big.json", 1024).unwrap_err().to_string(),
            "big.json: larger than 1024 bytes"
        );
        assert!(read(root, "../x", 100).is_err());
        assert!(read(root, "/etc/passwd", 100).is_err());
        assert_eq!(read_text(root, "none.txt", 100).unwrap(), None);
    }

    #[test]
    fn special_files_are_found_without_opening_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("a/file.txt"), "x").unwrap();
        for fifo in [".gitignore", "a/b/pipe", ".git/inner"] {
            let c = std::ffi::CString::new(root.join(fifo).to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        std::os::unix::fs::symlink("/dev/null", root.join("a/null")).unwrap();
        let _sock = std::os::unix::net::UnixListener::bind(root.join("a/sock")).unwrap();
        assert_eq!(
            special_files(root, 10).unwrap(),
            [
                ".gitignore (a FIFO)",
                "a/b/pipe (a FIFO)",
                "a/sock (a socket)"
            ]
        );
        assert_eq!(special_files(root, 1).unwrap().len(), 1);
    }
}
