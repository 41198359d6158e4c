//! Disk and memory footprint: bytes allocated under an engine's directory (engines may
//! not report their space, and peers cannot) and the process's resident set.

use std::path::Path;

/// Bytes allocated on disk for everything under `path` (allocated blocks, so sparse and
/// preallocated files count what they really occupy); 0 if it does not exist.
pub fn dir_size_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    let mut total = meta.blocks() * 512;
    if meta.is_dir()
        && let Ok(entries) = std::fs::read_dir(path)
    {
        for entry in entries.flatten() {
            total += dir_size_bytes(&entry.path());
        }
    }
    total
}

/// A `/proc/self/status` field in bytes; `None` outside Linux (no `/proc`) or if absent.
#[cfg(target_os = "linux")]
fn status_field_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(not(target_os = "linux"))]
fn status_field_bytes(field: &str) -> Option<u64> {
    let _ = field;
    None
}

/// Current resident set size (`VmRSS`), if the platform reports it.
pub fn rss_bytes() -> Option<u64> {
    status_field_bytes("VmRSS:")
}

/// Peak resident set size since start or the last [`reset_rss_peak`] (`VmHWM`).
pub fn rss_peak_bytes() -> Option<u64> {
    status_field_bytes("VmHWM:")
}

/// Resets the kernel's resident-set high-water mark (Linux `clear_refs` value 5), so each
/// engine's peak is its own; returns whether it worked (if not, the bench relies on
/// sampling `VmRSS`).
pub fn reset_rss_peak() -> bool {
    cfg!(target_os = "linux") && std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Hands memory the allocator holds but no longer uses back to the OS (glibc's
/// `malloc_trim`), between engines: the resident set is the process's, so without it an
/// engine that freed gigabytes (the in-memory `mem` and `trie` at tens of millions of
/// records) would inflate the next engines' RSS and could push a long run out of memory.
/// Elsewhere a no-op.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it only walks glibc's own arenas (under their
    // locks) and returns whole free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_size_counts_files() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir_size_bytes(dir.path());
        std::fs::write(dir.path().join("a"), vec![1u8; 64 << 10]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b"), vec![1u8; 64 << 10]).unwrap();
        assert!(dir_size_bytes(dir.path()) >= empty + (128 << 10));
        assert_eq!(dir_size_bytes(&dir.path().join("missing")), 0);
        assert!(rss_bytes().unwrap_or(1) > 0);
        release_free_memory();
    }
}
