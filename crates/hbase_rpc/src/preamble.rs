//! The six bytes a client sends first on a connection.
//!
//! * `HBas` + version (0) + auth code: an RPC connection follows. The server
//!   accepts SIMPLE (80) only: there is no SASL here.
//! * `Regist`: hbase-client 2.6's registry probe (HBASE-25051). The server
//!   answers with the cluster id (a `GetConnectionRegistryResponse` under
//!   call id -1) and closes.
//! * `Securi`: a Kerberos client asking for the server's principal. HBase
//!   without security answers `SecurityNotEnabledException` and keeps reading
//!   the real preamble; so does this server.
//!
//! Anything else is refused as HBase refuses it: a fatal exception whose
//! message the client recognises (`Expected HEADER=...`,
//! `serverVersion=...`), then the connection closes.
//!
//! Thread safety: pure functions over a byte array.

use std::net::SocketAddr;

use crate::error::{RpcError, WireError, class};

pub const PREAMBLE_LEN: usize = 6;
pub const RPC_MAGIC: &[u8; 4] = b"HBas";
pub const RPC_VERSION: u8 = 0;
/// `AuthMethod.SIMPLE`'s code.
pub const AUTH_SIMPLE: u8 = 80;
pub const REGISTRY_PREAMBLE: &[u8; 6] = b"Regist";
pub const SECURITY_PREAMBLE: &[u8; 6] = b"Securi";

/// What the first six bytes ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preamble {
    /// An RPC connection with SIMPLE authentication.
    Rpc,
    /// The connection registry probe.
    Registry,
    /// The security (server principal) probe.
    Security,
}

/// Reads the preamble; the error says what was wrong.
pub fn parse(bytes: [u8; PREAMBLE_LEN]) -> Result<Preamble, WireError> {
    if &bytes == REGISTRY_PREAMBLE {
        return Ok(Preamble::Registry);
    }
    if &bytes == SECURITY_PREAMBLE {
        return Ok(Preamble::Security);
    }
    let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
    if &magic != RPC_MAGIC {
        return Err(WireError::BadMagic(magic));
    }
    if bytes[4] != RPC_VERSION {
        return Err(WireError::WrongVersion(bytes[4]));
    }
    if bytes[5] != AUTH_SIMPLE {
        return Err(WireError::BadAuth(bytes[5]));
    }
    Ok(Preamble::Rpc)
}

/// The fatal exception HBase answers a refused preamble with, worded as
/// HBase words it (the client matches `Expected HEADER=` to detect an old
/// server).
pub(crate) fn refusal(bytes: [u8; PREAMBLE_LEN], error: &WireError, peer: SocketAddr) -> RpcError {
    let (version, auth) = (bytes[4], bytes[5] as i8);
    let detail = || {
        format!("serverVersion={RPC_VERSION}, clientVersion={version}, authMethod={auth}, authName=unknown from {peer}")
    };
    match error {
        WireError::BadMagic(magic) => RpcError::rpc_layer(
            class::FATAL_CONNECTION,
            format!(
                "Expected HEADER={} but received HEADER={} from {peer}",
                to_string_binary(RPC_MAGIC),
                to_string_binary(magic)
            ),
            true,
        ),
        WireError::WrongVersion(_) => RpcError::rpc_layer(class::WRONG_VERSION, detail(), true),
        _ => RpcError::rpc_layer(class::BAD_AUTH, detail(), true),
    }
}

/// HBase's `Bytes.toStringBinary`: printable ASCII as is, the rest `\xHH`.
pub(crate) fn to_string_binary(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if (b.is_ascii_alphanumeric() || b" `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?".contains(&b)) && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02X}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        "127.0.0.1:5000".parse().unwrap()
    }

    #[test]
    fn the_three_preambles_parse() {
        assert_eq!(parse(*b"HBas\x00\x50").unwrap(), Preamble::Rpc);
        assert_eq!(parse(*b"Regist").unwrap(), Preamble::Registry);
        assert_eq!(parse(*b"Securi").unwrap(), Preamble::Security);
    }

    #[test]
    fn a_bad_preamble_is_refused_with_hbase_s_wording() {
        let http = *b"GET / ";
        let e = parse(http).unwrap_err();
        assert!(matches!(e, WireError::BadMagic(m) if &m == b"GET "));
        let r = refusal(http, &e, peer());
        assert_eq!(r.class_name(), class::FATAL_CONNECTION);
        assert_eq!(r.message(), "Expected HEADER=HBas but received HEADER=GET  from 127.0.0.1:5000");

        let v1 = *b"HBas\x01\x50";
        let e = parse(v1).unwrap_err();
        assert!(matches!(e, WireError::WrongVersion(1)));
        let r = refusal(v1, &e, peer());
        assert_eq!(r.class_name(), class::WRONG_VERSION);
        assert!(r.message().starts_with("serverVersion=0, clientVersion=1, authMethod=80"), "{}", r.message());

        let kerberos = *b"HBas\x00\x51";
        let e = parse(kerberos).unwrap_err();
        assert!(matches!(e, WireError::BadAuth(81)));
        assert_eq!(refusal(kerberos, &e, peer()).class_name(), class::BAD_AUTH);
    }

    #[test]
    fn binary_bytes_print_as_hbase_prints_them() {
        assert_eq!(to_string_binary(b"HB\x00\xff\\"), "HB\\x00\\xFF\\x5C");
    }
}
