//! Confinement of the agent's file tools to the worktree: paths are relative, never climb with
//! `..`, never pass through a symbolic link (the last component included), and never touch `.git`.
//!
//! [`resolve`] checks a path as given. The file operations here ([`open_read`], [`write`],
//! [`remove`], [`rename`], [`kind`]) check it again right before acting and then walk to it one
//! directory at a time with `openat(O_NOFOLLOW)`, so a symbolic link swapped in after the check
//! makes the operation fail instead of leaving the worktree.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// Resolves `rel` inside `root`, refusing anything that could leave it.
pub fn resolve(root: &Path, rel: &str) -> Result<PathBuf, ToolError> {
    let rel = rel.trim();
    if rel.contains('\0') {
        return Err(ToolError::path(rel, "contains a NUL byte"));
    }
    let path = Path::new(rel);
    if path.is_absolute() {
        return Err(ToolError::path(
            rel,
            "is absolute; give a path relative to the repository root",
        ));
    }
    let mut out = root.to_path_buf();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::Normal(c) => {
                if c == ".git" {
                    return Err(ToolError::path(
                        rel,
                        "is inside .git, which tools may not touch",
                    ));
                }
                out.push(c);
                if let Ok(meta) = std::fs::symlink_metadata(&out)
                    && meta.file_type().is_symlink()
                {
                    return Err(ToolError::path(
                        rel,
                        "passes through a symbolic link, which tools do not follow",
                    ));
                }
            }
            Component::ParentDir => {
                return Err(ToolError::path(
                    rel,
                    "uses '..'; paths must stay inside the repository",
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::path(
                    rel,
                    "is absolute; give a path relative to the repository root",
                ));
            }
        }
    }
    Ok(out)
}

/// `path` relative to `root`, with `/` separators, for messages to the model.
pub fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// What is at a path, without following a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A symbolic link, socket, FIFO or device.
    Other,
}

/// A path's parent directory, opened without following links, and its last component.
struct Located {
    parent: OwnedFd,
    name: CString,
    rel: String,
}

/// Checks `rel` again and opens its parent one component at a time (creating missing
/// directories when `create`).
fn locate(root: &Path, rel: &str, create: bool) -> Result<Located, ToolError> {
    let full = resolve(root, rel)?;
    let shown = display(root, &full);
    let inner = full.strip_prefix(root).unwrap_or(&full);
    let comps: Vec<&OsStr> = inner.iter().collect();
    let Some((last, dirs)) = comps.split_last() else {
        return Err(ToolError::path(
            rel,
            "is the repository root; give a file path",
        ));
    };
    let err = |e: io::Error| fs_error(&shown, e);
    let mut fd = open_at(None, &cstring(root.as_os_str())?, libc::O_DIRECTORY).map_err(err)?;
    for dir in dirs {
        let name = cstring(dir)?;
        if create {
            // SAFETY: `fd` is an open directory and `name` a NUL-terminated string.
            let rc = unsafe { libc::mkdirat(fd.as_raw_fd(), name.as_ptr(), 0o755) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return Err(err(e));
                }
            }
        }
        fd = open_at(Some(&fd), &name, libc::O_DIRECTORY | libc::O_NOFOLLOW).map_err(err)?;
    }
    Ok(Located {
        parent: fd,
        name: cstring(last)?,
        rel: shown,
    })
}

/// Opens a regular file for reading.
pub fn open_read(root: &Path, rel: &str) -> Result<File, ToolError> {
    let at = locate(root, rel, false)?;
    let fd = open_at(
        Some(&at.parent),
        &at.name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )
    .map_err(|e| fs_error(&at.rel, e))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| fs_error(&at.rel, e))?;
    if !meta.is_file() {
        return Err(not_a_file(&at.rel, meta.is_dir()));
    }
    Ok(file)
}

/// What is at `rel` (`None` when nothing is).
pub fn kind(root: &Path, rel: &str) -> Result<Option<Kind>, ToolError> {
    let at = match locate(root, rel, false) {
        Ok(at) => at,
        Err(e) if e.kind == "not_found" => return Ok(None),
        Err(e) => return Err(e),
    };
    kind_at(&at)
}

fn kind_at(at: &Located) -> Result<Option<Kind>, ToolError> {
    // SAFETY: an all-zero `stat` is a valid value for fstatat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid directory fd, NUL-terminated name, and a pointer to a live `stat`.
    let rc = unsafe {
        libc::fstatat(
            at.parent.as_raw_fd(),
            at.name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(None),
            _ => Err(fs_error(&at.rel, e)),
        };
    }
    Ok(Some(match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        _ => Kind::Other,
    }))
}

/// Creates or replaces the regular file `rel` (and its missing directories); true when created.
pub fn write(root: &Path, rel: &str, bytes: &[u8]) -> Result<bool, ToolError> {
    let at = locate(root, rel, true)?;
    let existed = match kind_at(&at)? {
        None => false,
        Some(Kind::File) => true,
        Some(k) => return Err(not_a_file(&at.rel, k == Kind::Dir)),
    };
    let fd = open_at(
        Some(&at.parent),
        &at.name,
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )
    .map_err(|e| fs_error(&at.rel, e))?;
    io::Write::write_all(&mut File::from(fd), bytes).map_err(|e| fs_error(&at.rel, e))?;
    Ok(!existed)
}

/// Deletes the regular file `rel`.
pub fn remove(root: &Path, rel: &str) -> Result<(), ToolError> {
    let at = locate(root, rel, false)?;
    match kind_at(&at)? {
        None => {
            return Err(ToolError::new(
                "not_found",
                format!("{} does not exist", at.rel),
            ));
        }
        Some(Kind::File) => {}
        Some(k) => return Err(not_a_file(&at.rel, k == Kind::Dir)),
    }
    // SAFETY: valid directory fd and NUL-terminated name.
    let rc = unsafe { libc::unlinkat(at.parent.as_raw_fd(), at.name.as_ptr(), 0) };
    if rc != 0 {
        return Err(fs_error(&at.rel, io::Error::last_os_error()));
    }
    Ok(())
}

/// Moves the regular file `from` to `to` (replacing a file there), creating `to`'s directories.
pub fn rename(root: &Path, from: &str, to: &str) -> Result<(), ToolError> {
    let src = locate(root, from, false)?;
    match kind_at(&src)? {
        None => {
            return Err(ToolError::new(
                "not_found",
                format!("{} does not exist", src.rel),
            ));
        }
        Some(Kind::File) => {}
        Some(k) => return Err(not_a_file(&src.rel, k == Kind::Dir)),
    }
    let dst = locate(root, to, true)?;
    if let Some(k @ (Kind::Dir | Kind::Other)) = kind_at(&dst)? {
        return Err(not_a_file(&dst.rel, k == Kind::Dir));
    }
    // SAFETY: valid directory fds and NUL-terminated names.
    let rc = unsafe {
        libc::renameat(
            src.parent.as_raw_fd(),
            src.name.as_ptr(),
            dst.parent.as_raw_fd(),
            dst.name.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(fs_error(&dst.rel, io::Error::last_os_error()));
    }
    Ok(())
}

fn open_at(dir: Option<&OwnedFd>, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `dirfd` is AT_FDCWD or an open directory; `name` is NUL-terminated; the mode is
    // read only with O_CREAT.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn cstring(s: &OsStr) -> Result<CString, ToolError> {
    CString::new(s.as_bytes())
        .map_err(|_| ToolError::path(&s.to_string_lossy(), "contains a NUL byte"))
}

fn not_a_file(rel: &str, dir: bool) -> ToolError {
    let what = if dir {
        "is a directory"
    } else {
        "is not a regular file"
    };
    ToolError::new("not_a_file", format!("{rel} {what}"))
}

/// An I/O error as something the model can act on.
pub fn fs_error(rel: &str, e: io::Error) -> ToolError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => ToolError::path(
            rel,
            "passes through a symbolic link, which tools do not follow",
        ),
        Some(libc::ENOTDIR) => ToolError::path(
            rel,
            "goes through a file or link where a directory should be",
        ),
        Some(libc::ENOENT) => ToolError::new("not_found", format!("{rel} does not exist")),
        Some(libc::EISDIR) => not_a_file(rel, true),
        _ => ToolError::new("io", format!("{rel}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("src/etc")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("up")).unwrap();
        for bad in [
            "../x",
            "src/../../x",
            "/etc/passwd",
            "src/etc/passwd",
            "up/x",
            ".git/config",
            "a/.git/x",
            "a\0b",
        ] {
            assert!(resolve(root, bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            resolve(root, "src/main.py").unwrap(),
            root.join("src/main.py")
        );
        assert_eq!(
            resolve(root, "./src/./a.py").unwrap(),
            root.join("src/a.py")
        );
        assert_eq!(resolve(root, "").unwrap(), root.to_path_buf());
    }

    #[test]
    fn file_operations_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link")).unwrap();
        assert!(write(root, "a/b/c.txt", b"hi").unwrap());
        assert!(!write(root, "a/b/c.txt", b"ho").unwrap());
        assert_eq!(kind(root, "a/b").unwrap(), Some(Kind::Dir));
        assert_eq!(kind(root, "a/b/c.txt").unwrap(), Some(Kind::File));
        assert_eq!(kind(root, "nope/x").unwrap(), None);
        rename(root, "a/b/c.txt", "d/e.txt").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("d/e.txt")).unwrap(), "ho");
        remove(root, "d/e.txt").unwrap();
        assert_eq!(remove(root, "d/e.txt").unwrap_err().kind, "not_found");
        assert_eq!(remove(root, "d").unwrap_err().kind, "not_a_file");
        for bad in ["out/secret", "link", "out/new"] {
            assert_eq!(
                write(root, bad, b"x").unwrap_err().kind,
                "bad_path",
                "{bad}"
            );
            assert_eq!(open_read(root, bad).unwrap_err().kind, "bad_path", "{bad}");
        }
        assert_eq!(remove(root, "link").unwrap_err().kind, "bad_path");
        assert_eq!(rename(root, "link", "x").unwrap_err().kind, "bad_path");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert!(!outside.path().join("new").exists());
    }

    #[test]
    fn a_link_swapped_in_after_the_check_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("d")).unwrap();
        resolve(root, "d/x").unwrap();
        // The race: `d` becomes a link between the tool's check and its write.
        std::fs::remove_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("d")).unwrap();
        let at = open_at(None, &cstring(root.as_os_str()).unwrap(), libc::O_DIRECTORY).unwrap();
        let err = open_at(
            Some(&at),
            &CString::new("d").unwrap(),
            libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )
        .unwrap_err();
        assert!(matches!(fs_error("d", err).kind, "bad_path"));
        assert!(!outside.path().join("x").exists());
    }
}
