//! The meta commands `mg`, `ms`, `md`, `ma` and their flags.
//!
//! Each command accepts the flags protocol.txt lists for it (plus `P` and `L`, which every
//! meta command accepts and ignores: proxy hints); any other flag is refused with
//! `CLIENT_ERROR invalid flag` (memcached refuses only letters it knows for no command and
//! ignores the others). A flag appears at most once. Errors of meta commands are always
//! answered, `q` or not; a refused `ms` swallows its data block (its `<datalen>` is known).

use base64::Engine as _;

use crate::protocol::parse::{BAD_FORMAT, Frame, ParseLimits, Parsed, TOO_LARGE};
use crate::protocol::tokens::{
    Tokens, is_control, is_text_key, parse_data_len, parse_i64, parse_u32, parse_u64,
};
use crate::protocol::{
    ArithDirection, Command, KEY_BYTES_MAX, Key, META_TOKENS_MAX, MetaFlag, MetaFlags,
    OPAQUE_BYTES_MAX, StoreMode,
};

/// Which meta command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetaKind {
    /// `mg <key> <flags>*`.
    Get,
    /// `ms <key> <datalen> <flags>*`.
    Set,
    /// `md <key> <flags>*`.
    Delete,
    /// `ma <key> <flags>*`.
    Arith,
}

impl MetaKind {
    /// The flag letters the command accepts (protocol.txt's lists, and `P`, `L`).
    fn letters(self) -> &'static [u8] {
        match self {
            MetaKind::Get => b"bcCfhklOqstuvENRTPL",
            MetaKind::Set => b"bcCEFIkOqsTMNPL",
            MetaKind::Delete => b"bCEIkOqTxPL",
            MetaKind::Arith => b"bCENJDTMOqtcvkPL",
        }
    }

    /// The command's tokens before its flags (name, key, and `ms`'s `<datalen>`).
    fn fixed_tokens(self) -> usize {
        if self == MetaKind::Set { 3 } else { 2 }
    }
}

/// Why a meta command line was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MetaError {
    /// Key too long or with control characters; `F` not a 32-bit number.
    BadFormat,
    /// A letter the command does not accept, or a token after a flag that takes none.
    InvalidFlag,
    /// A flag given twice.
    Duplicate,
    /// A flag's token is not what the flag needs (`C`, `E`, `N`, `R`, `T`, `O`).
    BadToken,
    /// An `O` token over [`OPAQUE_BYTES_MAX`].
    OpaqueTooLong,
    /// More than [`META_TOKENS_MAX`] tokens.
    TooManyTokens,
    /// The `b` key is not base64.
    DecodeKey,
    /// An `M` token that is not one of the command's modes.
    BadMode,
    /// A `D` token that is not a 64-bit unsigned number.
    InvalidDelta,
    /// A `J` token that is not a 64-bit unsigned number.
    InvalidInitial,
}

impl MetaError {
    /// memcached's reply (`proto_parser.c`), with its quirk that `ma` answers every flag
    /// error as `invalid or duplicate flag`.
    fn reply(self, kind: MetaKind) -> &'static str {
        match (self, kind) {
            (MetaError::BadMode, MetaKind::Arith) => "CLIENT_ERROR invalid mode for ma M token\r\n",
            (MetaError::BadMode, _) => "CLIENT_ERROR invalid mode for ms M token\r\n",
            (MetaError::OpaqueTooLong, _) => "CLIENT_ERROR opaque token too long\r\n",
            (_, MetaKind::Arith) => "CLIENT_ERROR invalid or duplicate flag\r\n",
            (MetaError::BadFormat, _) => BAD_FORMAT,
            (MetaError::InvalidFlag, _) => "CLIENT_ERROR invalid flag\r\n",
            (MetaError::Duplicate, _) => "CLIENT_ERROR duplicate flag\r\n",
            (MetaError::BadToken, _) => "CLIENT_ERROR bad token in command line format\r\n",
            (MetaError::TooManyTokens, _) => "CLIENT_ERROR options flags are too long\r\n",
            (MetaError::DecodeKey, _) => "CLIENT_ERROR error decoding key\r\n",
            (MetaError::InvalidDelta, _) => "CLIENT_ERROR invalid numeric delta value\r\n",
            (MetaError::InvalidInitial, _) => "CLIENT_ERROR invalid numeric initial value\r\n",
        }
    }
}

/// Parses the meta command `kind` (the line after its name is `frame.args`).
pub(crate) fn parse_meta(frame: &Frame<'_>, limits: &ParseLimits, kind: MetaKind) -> Parsed {
    let mut tokens = Tokens::new(frame.args);
    let Some(key) = tokens.next() else {
        return frame.refuse(BAD_FORMAT);
    };
    let data_len = if kind == MetaKind::Set {
        match tokens.next().and_then(parse_data_len) {
            Some(len) => Some(len),
            None => return frame.refuse(BAD_FORMAT), // nothing known to swallow
        }
    } else {
        None
    };
    let swallow = data_len.map_or(0, |len| len + 2);
    let (key, flags) = match key_and_flags(kind, key, tokens) {
        Ok(parsed) => parsed,
        Err(error) => return frame.refuse_swallowing(error.reply(kind), swallow),
    };
    let command = match kind {
        MetaKind::Get => Command::MetaGet { key, flags },
        MetaKind::Delete => Command::MetaDelete { key, flags },
        MetaKind::Arith => Command::MetaArith { key, flags },
        MetaKind::Set => {
            let Some(data_len) = data_len else {
                return frame.refuse(BAD_FORMAT); // unreachable: `ms` parsed its length above
            };
            if data_len > limits.item_bytes_max {
                return frame.refuse_swallowing(TOO_LARGE, swallow);
            }
            return frame.with_data_block(data_len, false, |data| Command::MetaSet {
                key,
                data,
                flags,
            });
        }
    };
    frame.request(command)
}

/// The key (decoded if `b`) and the flags after it.
fn key_and_flags(
    kind: MetaKind,
    key: &[u8],
    flag_tokens: Tokens<'_>,
) -> Result<(Key, MetaFlags), MetaError> {
    if key.len() > KEY_BYTES_MAX {
        return Err(MetaError::BadFormat);
    }
    // Counted first, as memcached (a flag repeated many times is "too long", not "duplicate").
    let flags_max = META_TOKENS_MAX.saturating_sub(kind.fixed_tokens());
    if flag_tokens.clone().nth(flags_max).is_some() {
        return Err(MetaError::TooManyTokens);
    }
    let mut seen: u64 = 0; // bit `letter - b'A'` for each letter seen
    let mut flags = Vec::new();
    for token in flag_tokens {
        let Some((&letter, arg)) = token.split_first() else {
            continue; // tokens are never empty
        };
        if !(b'A'..=b'z').contains(&letter) {
            return Err(MetaError::InvalidFlag);
        }
        let bit = 1u64 << (letter - b'A');
        if seen & bit != 0 {
            return Err(MetaError::Duplicate);
        }
        seen |= bit;
        if !kind.letters().contains(&letter) {
            return Err(MetaError::InvalidFlag);
        }
        if let Some(flag) = flag(kind, letter, arg)? {
            flags.push(flag);
        }
    }
    let key = if seen & (1u64 << (b'b' - b'A')) != 0 {
        match base64::engine::general_purpose::STANDARD.decode(key) {
            Ok(decoded) if !decoded.is_empty() => decoded,
            _ => return Err(MetaError::DecodeKey),
        }
    } else if is_text_key(key) {
        key.to_vec()
    } else {
        return Err(MetaError::BadFormat);
    };
    debug_assert!(!key.is_empty() && key.len() <= KEY_BYTES_MAX);
    Ok((key, MetaFlags { flags }))
}

/// One flag: `letter` (accepted by `kind`) and its token `arg`; `None` for the ignored
/// `P` and `L`.
fn flag(kind: MetaKind, letter: u8, arg: &[u8]) -> Result<Option<MetaFlag>, MetaError> {
    let plain = |flag: MetaFlag| {
        if arg.is_empty() { Ok(Some(flag)) } else { Err(MetaError::InvalidFlag) }
    };
    let number = |error: MetaError| parse_u64(arg).ok_or(error);
    let ttl = || parse_i64(arg).ok_or(MetaError::BadToken);
    let flag = match letter {
        b'b' => return plain(MetaFlag::Base64Key),
        b'c' => return plain(MetaFlag::ReturnCas),
        b'f' => return plain(MetaFlag::ReturnClientFlags),
        b'h' => return plain(MetaFlag::ReturnHit),
        b'I' => return plain(MetaFlag::Invalidate),
        b'k' => return plain(MetaFlag::ReturnKey),
        b'l' => return plain(MetaFlag::ReturnLastAccess),
        b'q' => return plain(MetaFlag::Quiet),
        b's' => return plain(MetaFlag::ReturnSize),
        b't' => return plain(MetaFlag::ReturnTtl),
        b'u' => return plain(MetaFlag::NoLruBump),
        b'v' => return plain(MetaFlag::ReturnValue),
        b'x' => return plain(MetaFlag::RemoveValue),
        b'C' => MetaFlag::CompareCas(number(MetaError::BadToken)?),
        b'E' => MetaFlag::NewCas(number(MetaError::BadToken)?),
        b'D' => MetaFlag::Delta(number(MetaError::InvalidDelta)?),
        b'J' => MetaFlag::InitialValue(number(MetaError::InvalidInitial)?),
        b'F' => MetaFlag::SetClientFlags(parse_u32(arg).ok_or(MetaError::BadFormat)?),
        b'N' => MetaFlag::Vivify(ttl()?),
        b'R' => MetaFlag::Recache(ttl()?),
        b'T' => MetaFlag::SetTtl(ttl()?),
        b'O' => {
            if arg.len() > OPAQUE_BYTES_MAX {
                return Err(MetaError::OpaqueTooLong);
            }
            if arg.iter().any(|&b| is_control(b)) {
                return Err(MetaError::BadToken);
            }
            MetaFlag::Opaque(arg.to_vec())
        }
        b'M' => mode(kind, arg)?,
        b'P' | b'L' => return Ok(None),
        _ => return Err(MetaError::InvalidFlag),
    };
    Ok(Some(flag))
}

/// The `M` token: one character. `ms`: `S` set, `E` add, `A` append, `P` prepend,
/// `R` replace; `ma`: `I`/`+` incr, `D`/`-` decr. Lower case is accepted too (memcached
/// accepts only upper case; a lamina leniency, see `docs/server.md`).
fn mode(kind: MetaKind, arg: &[u8]) -> Result<MetaFlag, MetaError> {
    let &[mode] = arg else {
        return Err(MetaError::BadMode);
    };
    let flag = match (kind, mode.to_ascii_uppercase()) {
        (MetaKind::Set, b'S') => MetaFlag::StoreMode(StoreMode::Set),
        (MetaKind::Set, b'E') => MetaFlag::StoreMode(StoreMode::Add),
        (MetaKind::Set, b'A') => MetaFlag::StoreMode(StoreMode::Append),
        (MetaKind::Set, b'P') => MetaFlag::StoreMode(StoreMode::Prepend),
        (MetaKind::Set, b'R') => MetaFlag::StoreMode(StoreMode::Replace),
        (MetaKind::Arith, b'I' | b'+') => MetaFlag::ArithMode(ArithDirection::Incr),
        (MetaKind::Arith, b'D' | b'-') => MetaFlag::ArithMode(ArithDirection::Decr),
        _ => return Err(MetaError::BadMode),
    };
    Ok(flag)
}
