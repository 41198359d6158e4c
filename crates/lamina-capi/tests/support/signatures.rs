//! The C signatures of the API, read two ways: from `include/lamina.h`'s prototypes and from
//! the `#[unsafe(no_mangle)] extern "C" fn`s of `src/*.rs` (Rust types mapped to the C types
//! they are ABI-equal to), so a test can require that both list the same functions with the
//! same types.

use std::collections::BTreeMap;
use std::path::Path;

/// One function: its return type and parameter types, normalized (`lamina_status` is `int`;
/// a pointer to a `const` opaque handle is a pointer to the handle, as the Rust side takes
/// handles as `*const` or `*mut` by what it does with them, not by what C promises).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Return type.
    pub ret: String,
    /// Parameter types, in order.
    pub params: Vec<String>,
}

/// What the header declares: name -> (its exact prototype types, normalized signature).
pub fn header_functions(header: &str) -> BTreeMap<String, (Vec<String>, Signature)> {
    let code = strip_comments(header);
    let mut out = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.split_whitespace().collect::<Vec<_>>().join(" ");
        // Prototypes only: `ret name(params)` with no braces, typedefs or preprocessor lines.
        let statement = statement.rsplit(['{', '}']).next().unwrap_or_default().trim();
        let statement = statement.rsplit_once("#endif").map_or(statement, |(_, s)| s).trim();
        if statement.starts_with("typedef") || !statement.ends_with(')') {
            continue;
        }
        let Some(open) = statement.find('(') else { continue };
        let head = statement[..open].trim();
        let Some(name_at) = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) else {
            continue;
        };
        let name = &head[name_at + 1..];
        if !name.starts_with("lamina_") {
            continue;
        }
        let ret = head[..=name_at].trim().to_owned();
        let params_text = &statement[open + 1..statement.len() - 1];
        let exact: Vec<String> = if params_text.trim() == "void" {
            Vec::new()
        } else {
            params_text.split(',').map(|p| drop_param_name(p.trim())).collect()
        };
        let signature = Signature {
            ret: normalize_c(&ret),
            params: exact.iter().map(|t| normalize_c(t)).collect(),
        };
        let mut types = vec![ret];
        types.extend(exact);
        assert!(out.insert(name.to_owned(), (types, signature)).is_none(), "{name} twice");
    }
    out
}

/// What the Rust sources of `src_dir` export: name -> normalized signature.
pub fn exported_functions(src_dir: &Path) -> BTreeMap<String, Signature> {
    let mut out = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(src_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[unsafe(no_mangle)]") {
            rest = &rest[at + "#[unsafe(no_mangle)]".len()..];
            let fn_at = rest.find("fn ").expect("a function after no_mangle");
            assert!(
                rest[..fn_at].contains("extern \"C\""),
                "{}: a no_mangle function that is not extern \"C\"",
                file.display()
            );
            let after = &rest[fn_at + 3..];
            let open = after.find('(').unwrap();
            let name = after[..open].trim().to_owned();
            let close = matching_paren(after, open);
            let params: Vec<String> = after[open + 1..close]
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| rust_to_c(p.split_once(':').expect("name: type").1.trim()))
                .collect();
            let tail = &after[close + 1..after[close..].find('{').unwrap() + close];
            let ret =
                tail.trim().strip_prefix("->").map_or("void".to_owned(), |t| rust_to_c(t.trim()));
            assert!(
                out.insert(name.clone(), Signature { ret, params }).is_none(),
                "{name} exported twice"
            );
        }
    }
    out
}

fn matching_paren(text: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses")
}

fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("/*") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("*/").expect("an unterminated comment");
        rest = &rest[at + end + 2..];
    }
    out.push_str(rest);
    out.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// `const void *key` -> `const void *`.
fn drop_param_name(param: &str) -> String {
    let name_at = param
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .expect("a parameter has a type and a name");
    param[..=name_at].trim().to_owned()
}

/// Tokens separated by single spaces, `*` its own token; `lamina_status` is `int`, and
/// `const` before an opaque handle dropped.
fn normalize_c(ty: &str) -> String {
    let spaced = ty.replace('*', " * ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut out: Vec<&str> = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1).copied().unwrap_or_default();
        if *token == "const" && ["lamina_db", "lamina_iter", "lamina_batch"].contains(&next) {
            continue;
        }
        out.push(if *token == "lamina_status" { "int" } else { token });
    }
    out.join(" ")
}

/// The C type a Rust FFI type is ABI-equal to, normalized like [`normalize_c`].
fn rust_to_c(ty: &str) -> String {
    if let Some(pointee) = ty.strip_prefix("*const ").or_else(|| ty.strip_prefix("*mut ")) {
        let constness = if ty.starts_with("*const ") { "const " } else { "" };
        return normalize_c(&format!("{constness}{} *", rust_to_c(pointee)));
    }
    let c = match ty {
        "c_int" => "int",
        "usize" => "size_t",
        "u64" => "uint64_t",
        "c_void" => "void",
        "c_char" => "char",
        "LaminaOptions" => "lamina_options",
        "DbHandle" => "lamina_db",
        "IterHandle" => "lamina_iter",
        "BatchHandle" => "lamina_batch",
        other => panic!("no C type for the Rust type `{other}`: add it to rust_to_c"),
    };
    c.to_owned()
}
