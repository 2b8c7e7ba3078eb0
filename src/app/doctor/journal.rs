//! Whether the data directory sits where new files are slow: an ext4 without a journal, where
//! the kernel makes each new inode skip every inode deleted lately (`recently_deleted`), so
//! checkouts and environments, made and removed all day, crawl.

use std::path::{Path, PathBuf};

/// A warning when `data_dir` (or, while it does not exist, its nearest parent) is on an ext4
/// without a journal; `None` when it is not, or when this cannot be told.
pub(super) fn warning(data_dir: &Path) -> Option<String> {
    let dir = data_dir
        .ancestors()
        .find_map(|p| std::fs::canonicalize(p).ok())?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mount_of(&mountinfo, &dir)?;
    if mount.fstype != "ext4" {
        return None;
    }
    // `/proc/fs/jbd2` lists a journal per device, by the device's kernel name: `vda-8`.
    let device = std::fs::read_link(format!("/sys/dev/block/{}", mount.device)).ok()?;
    let name = format!("{}-", device.file_name()?.to_str()?);
    let journaled = std::fs::read_dir("/proc/fs/jbd2")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&name));
    (!journaled).then(|| {
        format!(
            "the data directory is on {} ({}), an ext4 without a journal: there a new file is slow once files have been deleted (3,000 new files took 1.2 s, 0.1 s with a journal), and checkouts and environments come and go all day — keep the data directory on a journaled file system (`tune2fs -O has_journal {}` while it is unmounted)",
            mount.source,
            mount.point.display(),
            mount.source
        )
    })
}

/// A line of `/proc/self/mountinfo`.
#[derive(Debug, PartialEq)]
struct Mount {
    point: PathBuf,
    /// `major:minor`.
    device: String,
    fstype: String,
    source: String,
}

/// The mount `path` (canonical) is on: the deepest mount point above it, the last mounted
/// where several share one (it hides the ones before).
fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for line in mountinfo.lines() {
        let Some(mount) = parse(line) else { continue };
        if !path.starts_with(&mount.point) {
            continue;
        }
        let deeper = best
            .as_ref()
            .is_none_or(|b| mount.point.components().count() >= b.point.components().count());
        if deeper {
            best = Some(mount);
        }
    }
    best
}

/// `id parent major:minor root point options [optional…] - fstype source super-options`.
fn parse(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let fields: Vec<&str> = left.split(' ').collect();
    let mut right = right.split(' ');
    Some(Mount {
        device: fields.get(2)?.to_string(),
        point: PathBuf::from(unescape(fields.get(4)?)),
        fstype: right.next()?.to_owned(),
        source: unescape(right.next()?),
    })
}

/// mountinfo writes a space, tab, newline and backslash as octal escapes.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 27 7:0 / /srv/vibe\\040data rw,noatime shared:20 - ext4 /dev/loop0 rw
41 27 0:30 / /srv/vibe rw - tmpfs tmpfs rw
42 27 0:31 / /srv/vibe rw - xfs /dev/sdb1 rw
";

    #[test]
    fn a_path_is_on_the_deepest_mount_above_it_and_the_last_of_one_point() {
        let on = |p: &str| mount_of(MOUNTINFO, Path::new(p)).unwrap();
        assert_eq!(on("/var/lib/vibeloop").source, "/dev/vda");
        assert_eq!(on("/var/lib/vibeloop").device, "254:0");
        let spaced = on("/srv/vibe data/x");
        assert_eq!(
            (spaced.point, spaced.fstype.as_str()),
            (PathBuf::from("/srv/vibe data"), "ext4")
        );
        // Two mounts at one point: the later one hides the earlier.
        assert_eq!(on("/srv/vibe/x").fstype, "xfs");
        assert_eq!(
            on("/srv/vibex").source,
            "/dev/vda",
            "a prefix of a name is not a parent"
        );
    }

    #[test]
    fn lines_that_are_not_mounts_are_passed_over() {
        assert_eq!(parse("garbage"), None);
        assert_eq!(parse("1 2 3 - ext4"), None);
    }
}
