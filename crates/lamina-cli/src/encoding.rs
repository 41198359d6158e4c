//! Keys and values on the command line: UTF-8 text by default, hexadecimal with `--hex`.
//! Printed text escapes bytes that are not printable (`\xNN`), so binary data cannot garble
//! a terminal or break the `key<TAB>value` line format.

/// Parses a command-line argument into bytes.
pub fn parse(arg: &str, hex: bool, what: &str) -> Result<Vec<u8>, String> {
    if !hex {
        return Ok(arg.as_bytes().to_vec());
    }
    let digits = arg.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{what} `{arg}` is not hexadecimal: odd number of digits"));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).map_err(|_| format!("{what} is not hex"))?;
            u8::from_str_radix(text, 16)
                .map_err(|_| format!("{what} `{arg}` is not hexadecimal: bad digits `{text}`"))
        })
        .collect()
}

/// Formats bytes for output.
pub fn format(bytes: &[u8], hex: bool) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    if hex {
        for b in bytes {
            let _ = write!(out, "{b:02x}");
        }
        return out;
    }
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if c.is_control() {
                for b in c.to_string().bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_roundtrips() {
        let bytes = parse("00ff10", true, "key").unwrap();
        assert_eq!(bytes, vec![0x00, 0xff, 0x10]);
        assert_eq!(format(&bytes, true), "00ff10");
        assert!(parse("abc", true, "key").is_err());
        assert!(parse("zz", true, "key").is_err());
    }

    #[test]
    fn text_escapes_what_is_not_printable() {
        assert_eq!(format(b"a\tb\\c\xff", false), "a\\x09b\\\\c\\xff");
        assert_eq!(format("héllo".as_bytes(), false), "héllo");
    }
}
