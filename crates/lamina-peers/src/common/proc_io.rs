//! The whole process's block-layer I/O bytes (Linux `/proc/self/io`), the one I/O measure
//! every peer library has: none of them counts its own reads and writes the way lamina's
//! storage layer does. While a peer runs alone in the process (the bench runs engines one
//! after another), the change in these counters is that peer's I/O.

/// Bytes the process caused to be read from and sent to the storage layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ProcIo {
    /// `read_bytes`: bytes fetched from the storage layer (page-cache hits excluded).
    pub read_bytes: u64,
    /// `write_bytes`: bytes sent (or dirtied, to be sent) to the storage layer.
    pub write_bytes: u64,
}

/// Longest `/proc/self/io` accepted (it is a few hundred bytes).
const PROC_IO_BYTES_MAX: usize = 4096;

impl ProcIo {
    /// The current counters; `None` where `/proc/self/io` is missing or unreadable.
    pub(crate) fn now() -> Option<ProcIo> {
        let text = std::fs::read_to_string("/proc/self/io").ok()?;
        ProcIo::parse(&text)
    }

    /// Parses the `name: value` lines of `/proc/<pid>/io`; both fields must be present.
    pub(crate) fn parse(text: &str) -> Option<ProcIo> {
        if text.len() > PROC_IO_BYTES_MAX {
            return None;
        }
        let field = |name: &str| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().parse::<u64>().ok()).flatten()
            })
        };
        Some(ProcIo { read_bytes: field("read_bytes")?, write_bytes: field("write_bytes")? })
    }

    /// Counters since `earlier` (0 where a counter went back).
    pub(crate) fn since(&self, earlier: &ProcIo) -> ProcIo {
        ProcIo {
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        let text = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\n\
                    write_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(ProcIo::parse(text), Some(ProcIo { read_bytes: 4096, write_bytes: 8192 }));
    }

    #[test]
    fn malformed_input_is_none() {
        assert_eq!(ProcIo::parse(""), None);
        assert_eq!(ProcIo::parse("read_bytes: 1\n"), None);
        assert_eq!(ProcIo::parse("read_bytes: x\nwrite_bytes: 2\n"), None);
        assert_eq!(ProcIo::parse(&"a".repeat(PROC_IO_BYTES_MAX + 1)), None);
    }

    #[test]
    fn differences_never_underflow() {
        let (a, b) =
            (ProcIo { read_bytes: 5, write_bytes: 1 }, ProcIo { read_bytes: 2, write_bytes: 9 });
        assert_eq!(a.since(&b), ProcIo { read_bytes: 3, write_bytes: 0 });
    }

    #[test]
    fn this_process_has_counters_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(ProcIo::now().is_some());
        }
    }
}
