//! Links the peer libraries, only with feature `peers`. Bindings are declared by hand in
//! `src/*/ffi.rs` against the C APIs of Debian's packages (see README.md); no bindgen, no
//! bundled builds. Berkeley DB and WiredTiger expose their handle methods as function
//! pointers (and WiredTiger's cursor key/value accessors are variadic), so a small C shim
//! per library, compiled with `cc`, turns them into plain functions.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/bdb_shim.c");
    println!("cargo:rerun-if-changed=csrc/wt_shim.c");
    if std::env::var_os("CARGO_FEATURE_PEERS").is_none() {
        return;
    }
    #[cfg(feature = "peers")]
    {
        cc::Build::new()
            .file("csrc/bdb_shim.c")
            .file("csrc/wt_shim.c")
            .warnings(true)
            .extra_warnings(true)
            .compile("lamina_peers_shim");
    }
    for lib in ["rocksdb", "leveldb", "lmdb", "db", "wiredtiger"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}
