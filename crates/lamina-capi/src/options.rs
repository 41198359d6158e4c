//! `lamina_options`: the C view of [`lamina_facade::Options`].

use std::ffi::{CStr, c_char, c_int};
use std::time::Duration;

use lamina_facade::{Durability, EngineKind, EngineSettings, LogRingSettings, Options};

use crate::status::Failure;

/// `LAMINA_DURABILITY_SYNC`: a write returns once it survives power loss.
pub const LAMINA_DURABILITY_SYNC: c_int = 0;
/// `LAMINA_DURABILITY_BUFFERED`: a write survives at most `durability_max_delay_us` later.
pub const LAMINA_DURABILITY_BUFFERED: c_int = 1;
/// `LAMINA_DURABILITY_NONE`: writes survive a clean close only.
pub const LAMINA_DURABILITY_NONE: c_int = 2;

/// `lamina_options` of `lamina.h`; the field order and types are the ABI.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaminaOptions {
    /// NUL-terminated engine name; NULL means the default engine.
    pub engine: *const c_char,
    /// One of the `LAMINA_DURABILITY_*` constants.
    pub durability: c_int,
    /// With `LAMINA_DURABILITY_BUFFERED`: the delay bound in microseconds; else ignored.
    pub durability_max_delay_us: u64,
    /// Memory for the engine's in-memory level or buffers.
    pub memory_budget_bytes: u64,
    /// Block cache size; 0 disables the cache.
    pub cache_bytes: u64,
    /// Most bytes the database may occupy on disk; 0 means unlimited.
    pub disk_budget_bytes: u64,
    /// Nonzero: create the directory if it does not exist.
    pub create_if_missing: c_int,
    /// Most memory the engine's data may take; 0 means unlimited.
    pub memory_limit_bytes: u64,
    /// Engines "trie" and "mem": the log's write buffer in bytes; 0 = the engine's default.
    pub log_buffer_bytes: u64,
}

impl LaminaOptions {
    /// The defaults of the Rust API.
    pub(crate) fn defaults() -> LaminaOptions {
        let rust = Options::default();
        let (durability, durability_max_delay_us) = match rust.durability {
            Durability::Sync => (LAMINA_DURABILITY_SYNC, 0),
            Durability::Buffered { max_delay } => (
                LAMINA_DURABILITY_BUFFERED,
                u64::try_from(max_delay.as_micros()).unwrap_or(u64::MAX),
            ),
            Durability::None => (LAMINA_DURABILITY_NONE, 0),
        };
        LaminaOptions {
            engine: std::ptr::null(),
            durability,
            durability_max_delay_us,
            memory_budget_bytes: rust.memory_budget_bytes,
            cache_bytes: rust.cache_bytes,
            disk_budget_bytes: 0,
            create_if_missing: c_int::from(rust.create_if_missing),
            memory_limit_bytes: 0,
            log_buffer_bytes: 0,
        }
    }

    /// The Rust options these stand for. Range checks are left to `Options::validate` (run by
    /// `Db::open`), so the messages are the same as in Rust.
    ///
    /// # Safety
    /// `engine`, if non-NULL, must point to a NUL-terminated string.
    pub(crate) unsafe fn to_rust(self) -> Result<Options, Failure> {
        let engine = if self.engine.is_null() {
            EngineKind::default()
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            let name = unsafe { CStr::from_ptr(self.engine) };
            let name = name.to_str().map_err(|_| Failure::invalid("engine name is not UTF-8"))?;
            EngineKind::from_name(name)?
        };
        let durability = match self.durability {
            LAMINA_DURABILITY_SYNC => Durability::Sync,
            LAMINA_DURABILITY_BUFFERED => Durability::Buffered {
                max_delay: Duration::from_micros(self.durability_max_delay_us),
            },
            LAMINA_DURABILITY_NONE => Durability::None,
            other => {
                return Err(Failure::invalid(format!(
                    "option `durability`: {other} is not one of LAMINA_DURABILITY_SYNC (0), \
                     _BUFFERED (1), _NONE (2)"
                )));
            }
        };
        // Settings only the log-ring engines have: refused with the others by `validate`.
        let engine_settings = if self.log_buffer_bytes == 0 {
            EngineSettings::Default
        } else {
            let bytes = usize::try_from(self.log_buffer_bytes)
                .map_err(|_| Failure::invalid("option `log_buffer_bytes` is too large"))?;
            EngineSettings::LogRing(LogRingSettings::new().log_buffer_bytes(bytes))
        };
        Ok(Options {
            engine,
            engine_settings,
            durability,
            memory_budget_bytes: self.memory_budget_bytes,
            cache_bytes: self.cache_bytes,
            create_if_missing: self.create_if_missing != 0,
            disk_budget_bytes: self.disk_budget_bytes,
            memory_limit_bytes: self.memory_limit_bytes,
            ..Options::default()
        })
    }
}

/// `void lamina_options_init(lamina_options *opts)`: fills `opts` with the defaults (those of
/// the Rust API: default engine, sync durability, 4 MiB memory, 15 MiB cache, unlimited
/// disk and memory, create if missing). NULL is ignored.
///
/// # Safety
/// `opts`, if non-NULL, must point to writable memory for one `lamina_options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_options_init(opts: *mut LaminaOptions) {
    if opts.is_null() {
        return;
    }
    // `Options::default()` cannot panic, but nothing may unwind out of here regardless.
    if let Ok(defaults) = std::panic::catch_unwind(LaminaOptions::defaults) {
        // SAFETY: non-NULL and writable by the contract; `write` does not read the old
        // (possibly uninitialized) contents.
        unsafe { opts.write(defaults) };
    }
}

#[cfg(test)]
mod tests {
    use std::mem::MaybeUninit;

    use super::*;
    use crate::status::LAMINA_INVALID_ARGUMENT;

    fn init() -> LaminaOptions {
        let mut opts = MaybeUninit::<LaminaOptions>::uninit();
        // SAFETY: `opts` is writable; `lamina_options_init` writes every field.
        unsafe {
            lamina_options_init(opts.as_mut_ptr());
            opts.assume_init()
        }
    }

    #[test]
    fn defaults_are_the_rust_defaults() {
        let opts = init();
        // SAFETY: `engine` is NULL.
        let rust = unsafe { opts.to_rust() }.unwrap();
        assert_eq!(rust, Options::default());
        assert_eq!(opts.disk_budget_bytes, 0);
        // SAFETY: NULL is documented as ignored.
        unsafe { lamina_options_init(std::ptr::null_mut()) };
    }

    #[test]
    fn every_field_reaches_the_rust_options() {
        let opts = LaminaOptions {
            engine: c"mem".as_ptr(),
            durability: LAMINA_DURABILITY_BUFFERED,
            durability_max_delay_us: 2500,
            memory_budget_bytes: 1 << 20,
            cache_bytes: 0,
            disk_budget_bytes: 3 << 30,
            create_if_missing: 0,
            memory_limit_bytes: 2 << 30,
            log_buffer_bytes: 512 << 10,
        };
        // SAFETY: `engine` is a C string literal.
        let rust = unsafe { opts.to_rust() }.unwrap();
        assert_eq!(rust.engine, EngineKind::Mem);
        assert_eq!(
            rust.durability,
            Durability::Buffered { max_delay: Duration::from_micros(2500) }
        );
        assert_eq!((rust.memory_budget_bytes, rust.cache_bytes), (1 << 20, 0));
        assert_eq!((rust.disk_budget_bytes, rust.memory_limit_bytes), (3 << 30, 2 << 30));
        assert!(!rust.create_if_missing);
        assert_eq!(
            rust.engine_settings,
            EngineSettings::LogRing(LogRingSettings::new().log_buffer_bytes(512 << 10))
        );
    }

    #[test]
    fn every_engine_is_selectable_by_its_name() {
        for kind in EngineKind::ALL {
            let name = std::ffi::CString::new(kind.name()).unwrap();
            let opts = LaminaOptions { engine: name.as_ptr(), ..init() };
            // SAFETY: `engine` is a NUL-terminated string that outlives the call.
            let rust = unsafe { opts.to_rust() }.unwrap();
            assert_eq!(rust.engine, *kind);
        }
        let opts = LaminaOptions { engine: c"nbtree".as_ptr(), ..init() };
        // SAFETY: `engine` is a C string literal.
        assert_eq!(unsafe { opts.to_rust() }.unwrap().engine, EngineKind::Nbtree);
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (
                LaminaOptions { engine: c"btrfs".as_ptr(), ..init() },
                LAMINA_INVALID_ARGUMENT,
                "unknown engine",
            ),
            (LaminaOptions { durability: 7, ..init() }, LAMINA_INVALID_ARGUMENT, "durability"),
        ];
        for (opts, status, text) in cases {
            // SAFETY: `engine` is NULL or a C string literal.
            let failure = unsafe { opts.to_rust() }.unwrap_err();
            assert_eq!(failure.status, status, "{}", failure.message);
            assert!(failure.message.contains(text), "{}", failure.message);
        }
        let bytes = [0xffu8, 0];
        let opts = LaminaOptions { engine: bytes.as_ptr().cast(), ..init() };
        // SAFETY: `bytes` is NUL-terminated.
        assert!(unsafe { opts.to_rust() }.unwrap_err().message.contains("UTF-8"));
    }
}
