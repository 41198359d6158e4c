//! `include/lamina.h` and the exported functions agree: every `#[unsafe(no_mangle)] extern
//! "C" fn` of `src/` is declared in the header with the same parameter and return types
//! (Rust types mapped to their ABI-equal C types), and the header declares nothing else.
//! (`tests/c_suite.rs` also compiles a C file that takes the address of every declared
//! function with its declared type and links it against the library, and compares the
//! header with the library's symbol table.)

#[path = "support/signatures.rs"]
mod signatures;

use std::path::Path;

const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn every_exported_function_is_declared_with_its_types_and_nothing_else_is() {
    let header = std::fs::read_to_string(Path::new(CRATE_DIR).join("include/lamina.h")).unwrap();
    let declared = signatures::header_functions(&header);
    let exported = signatures::exported_functions(&Path::new(CRATE_DIR).join("src"));
    assert!(exported.len() >= 20, "only {} exported functions found", exported.len());
    let mut problems = Vec::new();
    for (name, signature) in &exported {
        match declared.get(name) {
            None => problems.push(format!("{name} is exported but not declared in lamina.h")),
            Some((_, header)) if header != signature => problems.push(format!(
                "{name}: lamina.h declares {header:?}, the Rust code exports {signature:?}"
            )),
            Some(_) => {}
        }
    }
    for name in declared.keys().filter(|name| !exported.contains_key(*name)) {
        problems.push(format!("{name} is declared in lamina.h but not exported"));
    }
    assert!(problems.is_empty(), "lamina.h and the exports disagree:\n{}", problems.join("\n"));
}
