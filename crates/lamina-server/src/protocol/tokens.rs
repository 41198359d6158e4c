//! The tokenizer of one command line and the number and key rules of its tokens.
//!
//! As memcached, tokens are runs of bytes other than the space (`' '`, only: a tab is part of
//! a token), found lazily in one left-to-right scan with no allocation. Numbers are plain
//! decimal digits (a leading `-` for signed ones): no `+`, no spaces, no hex, checked for
//! overflow, as memcached's `mcmc_toktou64` and friends.

use crate::protocol::KEY_BYTES_MAX;

/// The tokens of a line (without its `\r\n`), in order.
#[derive(Debug, Clone)]
pub(crate) struct Tokens<'a> {
    /// The bytes not yet tokenized.
    rest: &'a [u8],
}

impl<'a> Tokens<'a> {
    /// The tokens of `line`.
    pub(crate) fn new(line: &'a [u8]) -> Self {
        Tokens { rest: line }
    }

    /// Whether no token is left.
    pub(crate) fn is_empty(&self) -> bool {
        self.rest.iter().all(|&b| b == b' ')
    }

    /// Whether what is left is exactly one `noreply` token (the optional last token of the
    /// classic commands).
    pub(crate) fn rest_is_noreply(&self) -> bool {
        let mut rest = self.clone();
        rest.next() == Some(b"noreply".as_slice()) && rest.is_empty()
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&b| b != b' ')?;
        let from_start = &self.rest[start..];
        let len = from_start.iter().position(|&b| b == b' ').unwrap_or(from_start.len());
        let (token, rest) = from_start.split_at(len);
        debug_assert!(!token.is_empty());
        self.rest = rest;
        Some(token)
    }
}

/// The last token of `line`, if the line has at least two (memcached's test for `noreply`
/// looks at the last token, whatever its position, and never at the command itself).
pub(crate) fn last_token_after_first(line: &[u8]) -> Option<&[u8]> {
    let end = line.iter().rposition(|&b| b != b' ')? + 1;
    let start = line[..end].iter().rposition(|&b| b == b' ').map_or(0, |space| space + 1);
    let before = &line[..start];
    if before.iter().all(|&b| b == b' ') {
        return None; // the only token is the first one
    }
    Some(&line[start..end])
}

/// Whether the line's last token (not its first) is `noreply`.
pub(crate) fn ends_with_noreply(line: &[u8]) -> bool {
    last_token_after_first(line) == Some(b"noreply".as_slice())
}

/// An unsigned 64-bit decimal.
pub(crate) fn parse_u64(token: &[u8]) -> Option<u64> {
    if token.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &b in token {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

/// An unsigned 32-bit decimal.
pub(crate) fn parse_u32(token: &[u8]) -> Option<u32> {
    parse_u64(token).and_then(|v| u32::try_from(v).ok())
}

/// A signed 64-bit decimal (`-` allowed in front).
pub(crate) fn parse_i64(token: &[u8]) -> Option<i64> {
    match token.split_first() {
        Some((b'-', digits)) => {
            let magnitude = parse_u64(digits)?;
            0i64.checked_sub_unsigned(magnitude)
        }
        _ => parse_u64(token).and_then(|v| i64::try_from(v).ok()),
    }
}

/// The largest data block length memcached parses (`INT_MAX - 2`: the block and its `\r\n`
/// fit an `int`); a longer or negative length is a malformed line.
pub(crate) const DATA_LEN_MAX: u64 = i32::MAX as u64 - 2;

/// A data block length: 0 to [`DATA_LEN_MAX`].
pub(crate) fn parse_data_len(token: &[u8]) -> Option<usize> {
    parse_u64(token).filter(|&len| len <= DATA_LEN_MAX).map(|len| len as usize)
}

/// Whether `token` is a valid text key: 1 to [`KEY_BYTES_MAX`] bytes, no control
/// characters (spaces cannot occur: they separate tokens). Bytes >= 0x80 are allowed (UTF-8
/// keys work with memcached too).
///
/// protocol.txt says keys hold no control characters, but memcached does not check, and
/// clients rely on that: memaslap starts every key with eight 0x10 bytes. So, as memcached,
/// any byte but the space (a token separator) and the newline (the line's end, which never
/// reaches a token) is accepted.
pub(crate) fn is_text_key(token: &[u8]) -> bool {
    !token.is_empty() && token.len() <= KEY_BYTES_MAX && !token.contains(&b'\n')
}

/// An ASCII control character (C0 or DEL).
pub(crate) fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(line: &[u8]) -> Vec<&[u8]> {
        Tokens::new(line).collect()
    }

    #[test]
    fn splits_on_spaces_only() {
        assert_eq!(all(b"  get a\tb  c "), vec![&b"get"[..], b"a\tb", b"c"]);
        assert!(all(b"").is_empty());
        assert!(all(b"   ").is_empty());
        assert!(Tokens::new(b"  ").is_empty());
    }

    #[test]
    fn noreply_is_the_last_token_after_the_first() {
        assert!(ends_with_noreply(b"set a 0 0 1 noreply"));
        assert!(ends_with_noreply(b"set a noreply  "));
        assert!(!ends_with_noreply(b"noreply"));
        assert!(!ends_with_noreply(b"  noreply "));
        assert!(!ends_with_noreply(b"set a 0 0 1 noreplyx"));
        assert!(!ends_with_noreply(b""));
        let mut t = Tokens::new(b"a noreply ");
        t.next();
        assert!(t.rest_is_noreply());
        let mut t = Tokens::new(b"a noreply b");
        t.next();
        assert!(!t.rest_is_noreply());
    }

    #[test]
    fn numbers_are_strict_decimals() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"007"), Some(7));
        for bad in [&b""[..], b"+1", b"-1", b"1x", b" 1", b"0x10"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b"--1"), None);
        assert_eq!(parse_data_len(b"2147483645"), Some(2_147_483_645));
        assert_eq!(parse_data_len(b"2147483646"), None);
        assert_eq!(parse_data_len(b"-1"), None);
    }

    #[test]
    fn keys() {
        assert!(is_text_key(b"a"));
        assert!(is_text_key("clé".as_bytes()));
        assert!(is_text_key(&[b'k'; KEY_BYTES_MAX]));
        assert!(!is_text_key(&[b'k'; KEY_BYTES_MAX + 1]));
        assert!(!is_text_key(b""));
        // Control bytes are accepted, as memcached does (memaslap's keys have them).
        assert!(is_text_key(b"a\tb"));
        assert!(is_text_key(b"\x10\x10key"));
        assert!(is_text_key(b"a\x7f"));
        assert!(is_text_key(b"a\0"));
        assert!(!is_text_key(b"a\nb"));
    }
}
