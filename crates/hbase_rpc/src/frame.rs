//! Framing of the connection header, calls and responses.
//!
//! After the preamble, everything is a frame: a 4-byte big-endian length and
//! that many bytes.
//!
//! * The first frame is the `ConnectionHeader`, a bare protobuf.
//! * A call is a varint-delimited `RequestHeader`, the varint-delimited
//!   request message (when `request_param`), then the cell block of
//!   `cell_block_meta.length` bytes.
//! * A response is a varint-delimited `ResponseHeader`, the varint-delimited
//!   response message (absent when the header carries an exception), then
//!   the cell block of `cell_block_meta.length` bytes.
//!
//! Reading a frame checks its length against the limit before reading, and
//! grows its buffer as bytes arrive, so a hostile length costs nothing until
//! the bytes come. Splitting a frame slices it (`Bytes`) and checks each
//! varint and length against what remains.
//!
//! Thread safety: pure functions; the reader and writer are the caller's.

use std::io::{self, Read};

use bytes::{Buf, Bytes};
use prost::Message;

use crate::error::WireError;
use crate::pb::hbase::pb::{ConnectionHeader, RequestHeader, ResponseHeader};

/// HBase's `hbase.ipc.max.request.size` default: 256 MiB.
pub const DEFAULT_MAX_REQUEST_SIZE: usize = 256 * 1024 * 1024;

/// The first read of a frame body, before the bytes show it is that large.
const INITIAL_READ: usize = 64 * 1024;

/// Reads a frame's 4-byte length; `None` on a clean end of stream before it.
pub fn read_length(r: &mut impl Read) -> Result<Option<u32>, WireError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(WireError::Truncated { what: "frame length", need: 4, have: got });
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Some(u32::from_be_bytes(len)))
}

/// Reads a frame body of `len` bytes.
pub fn read_body(r: &mut impl Read, len: usize) -> Result<Bytes, WireError> {
    let mut body = Vec::with_capacity(len.min(INITIAL_READ));
    r.take(len as u64).read_to_end(&mut body)?;
    if body.len() < len {
        return Err(WireError::Truncated { what: "frame", need: len, have: body.len() });
    }
    Ok(Bytes::from(body))
}

/// Reads one whole frame of at most `max` bytes; `None` on a clean end of
/// stream between frames.
pub fn read_frame(r: &mut impl Read, max: usize) -> Result<Option<Bytes>, WireError> {
    let Some(len) = read_length(r)? else {
        return Ok(None);
    };
    check_length(len, max)?;
    read_body(r, len as usize).map(Some)
}

pub(crate) fn check_length(len: u32, max: usize) -> Result<(), WireError> {
    if len as usize > max {
        return Err(WireError::FrameTooLarge { length: u64::from(len), max });
    }
    Ok(())
}

/// Splits a varint-delimited record off the front of `buf`.
pub fn take_delimited(buf: &mut Bytes, what: &'static str) -> Result<Bytes, WireError> {
    let len = prost::decode_length_delimiter(&mut *buf).map_err(|source| WireError::Protobuf { what, source })?;
    if len > buf.len() {
        return Err(WireError::Truncated { what, need: len, have: buf.len() });
    }
    Ok(buf.split_to(len))
}

fn decode<M: Message + Default>(bytes: Bytes, what: &'static str) -> Result<M, WireError> {
    M::decode(bytes).map_err(|source| WireError::Protobuf { what, source })
}

/// Appends `message` (already encoded) with its varint length.
pub fn put_delimited(out: &mut Vec<u8>, message: &[u8]) {
    prost::encode_length_delimiter(message.len(), out).expect("a Vec grows");
    out.extend_from_slice(message);
}

/// The connection header from its frame.
pub fn decode_connection_header(frame: Bytes) -> Result<ConnectionHeader, WireError> {
    decode(frame, "connection header")
}

/// The connection header's frame (what a client sends after the preamble).
pub fn encode_connection_header(header: &ConnectionHeader) -> Vec<u8> {
    let body = header.encode_to_vec();
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// A call's frame, split: its header, its request message (empty when the
/// header says there is none) and its cell block (empty when none).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFrame {
    pub header: RequestHeader,
    pub param: Bytes,
    pub cell_block: Bytes,
}

/// The request header off the front of a call's frame; `frame` keeps the
/// rest. Failing here leaves no call id to answer, so the server treats it
/// as fatal to the connection.
pub fn take_request_header(frame: &mut Bytes) -> Result<RequestHeader, WireError> {
    let header = take_delimited(frame, "request header")?;
    decode(header, "request header")
}

/// The request message and cell block that follow the header. Failing here
/// is the call's failure: the server answers it under the header's call id.
pub fn split_request_body(header: &RequestHeader, mut rest: Bytes) -> Result<RequestFrame, WireError> {
    let param = if header.request_param() { take_delimited(&mut rest, "request message")? } else { Bytes::new() };
    let cell_block = match &header.cell_block_meta {
        Some(meta) => {
            let len = meta.length() as usize;
            if len > rest.len() {
                return Err(WireError::Truncated { what: "request cell block", need: len, have: rest.len() });
            }
            rest.split_to(len)
        }
        None => Bytes::new(),
    };
    Ok(RequestFrame { header: header.clone(), param, cell_block })
}

/// A whole call frame (length prefix included): what a client sends.
pub fn encode_request(header: &RequestHeader, param: &[u8], cell_block: &[u8]) -> Vec<u8> {
    encode_framed(&header.encode_to_vec(), Some(param), cell_block)
}

/// A whole response frame (length prefix included). `message` is `None`
/// when the header carries an exception.
pub fn encode_response(header: &ResponseHeader, message: Option<&[u8]>, cell_block: &[u8]) -> Vec<u8> {
    encode_framed(&header.encode_to_vec(), message, cell_block)
}

/// Writes a response frame into `out` (cleared first), its cell block
/// written in place by `write_cells`, which must append exactly
/// `cell_block_len` bytes (the length the header declares): the block is
/// not built apart and copied in.
pub fn encode_response_into<E>(
    out: &mut Vec<u8>,
    header: &ResponseHeader,
    message: Option<&[u8]>,
    cell_block_len: usize,
    write_cells: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    let header = header.encode_to_vec();
    out.clear();
    let message_len = message.map_or(0, |m| 10 + m.len());
    out.reserve(4 + 10 + header.len() + message_len + cell_block_len);
    out.extend_from_slice(&[0u8; 4]);
    put_delimited(out, &header);
    if let Some(message) = message {
        put_delimited(out, message);
    }
    let before_cells = out.len();
    write_cells(out)?;
    debug_assert_eq!(out.len() - before_cells, cell_block_len, "the cell block's declared length");
    let total = (out.len() - 4) as u32;
    out[..4].copy_from_slice(&total.to_be_bytes());
    Ok(())
}

fn encode_framed(header: &[u8], message: Option<&[u8]>, cell_block: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 4];
    put_delimited(&mut out, header);
    if let Some(message) = message {
        put_delimited(&mut out, message);
    }
    out.extend_from_slice(cell_block);
    let total = (out.len() - 4) as u32;
    out[..4].copy_from_slice(&total.to_be_bytes());
    out
}

/// A response frame (without its length prefix), split as a client splits it:
/// the header, the message when there is no exception, the cell block.
pub fn split_response(mut frame: Bytes) -> Result<(ResponseHeader, Option<Bytes>, Bytes), WireError> {
    let header: ResponseHeader = decode(take_delimited(&mut frame, "response header")?, "response header")?;
    let message = if header.exception.is_some() { None } else { Some(take_delimited(&mut frame, "response message")?) };
    let cell_len = header.cell_block_meta.as_ref().map_or(0, |m| m.length() as usize);
    if cell_len > frame.remaining() {
        return Err(WireError::Truncated { what: "response cell block", need: cell_len, have: frame.remaining() });
    }
    Ok((header, message, frame.split_to(cell_len)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::hbase::pb::{CellBlockMeta, ExceptionResponse};

    /// A reader that hands out one byte per read, as a slow socket may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    fn header(call_id: u32, cells: Option<u32>) -> RequestHeader {
        RequestHeader {
            call_id: Some(call_id),
            method_name: Some("Get".into()),
            request_param: Some(true),
            cell_block_meta: cells.map(|length| CellBlockMeta { length: Some(length) }),
            priority: Some(0),
            timeout: Some(60_000),
            ..Default::default()
        }
    }

    #[test]
    fn a_call_round_trips_through_a_trickling_reader() {
        // A param over 127 bytes needs a two-byte varint, which the trickle
        // delivers a byte at a time.
        let param = vec![7u8; 300];
        let wire = encode_request(&header(9, Some(5)), &param, b"cells");
        let mut reader = Trickle(&wire);
        let mut frame = read_frame(&mut reader, DEFAULT_MAX_REQUEST_SIZE).unwrap().unwrap();
        assert!(read_frame(&mut reader, DEFAULT_MAX_REQUEST_SIZE).unwrap().is_none(), "clean end");
        let h = take_request_header(&mut frame).unwrap();
        assert_eq!(h, header(9, Some(5)));
        let body = split_request_body(&h, frame).unwrap();
        assert_eq!(body.param, param);
        assert_eq!(&body.cell_block[..], b"cells");
    }

    #[test]
    fn a_response_round_trips_with_and_without_an_exception() {
        let ok = ResponseHeader {
            call_id: Some(3),
            exception: None,
            cell_block_meta: Some(CellBlockMeta { length: Some(2) }),
        };
        let wire = encode_response(&ok, Some(b"msg"), b"cb");
        assert_eq!(u32::from_be_bytes(wire[..4].try_into().unwrap()) as usize, wire.len() - 4);
        let (h, m, cb) = split_response(Bytes::copy_from_slice(&wire[4..])).unwrap();
        assert_eq!((h, m.as_deref(), &cb[..]), (ok, Some(&b"msg"[..]), &b"cb"[..]));

        let failed = ResponseHeader {
            call_id: Some(u32::MAX),
            exception: Some(ExceptionResponse { exception_class_name: Some("x.Y".into()), ..Default::default() }),
            cell_block_meta: None,
        };
        let wire = encode_response(&failed, None, b"");
        let (h, m, cb) = split_response(Bytes::copy_from_slice(&wire[4..])).unwrap();
        assert_eq!((h, m, cb.len()), (failed, None, 0));
    }

    #[test]
    fn a_response_written_in_place_is_the_same_frame_in_a_reused_buffer() {
        let header = ResponseHeader {
            call_id: Some(7),
            exception: None,
            cell_block_meta: Some(CellBlockMeta { length: Some(5) }),
        };
        let apart = encode_response(&header, Some(b"message"), b"cells");
        // A buffer left with a longer frame in it, as a worker's is.
        let mut out = vec![0xAB; 1000];
        let written: Result<(), ()> = encode_response_into(&mut out, &header, Some(b"message"), 5, |out| {
            out.extend_from_slice(b"cells");
            Ok(())
        });
        written.unwrap();
        assert_eq!(out, apart);
        let failed: Result<(), &str> = encode_response_into(&mut out, &header, None, 5, |_| Err("no"));
        assert_eq!(failed, Err("no"), "the cells' error is the caller's");
    }

    #[test]
    fn every_truncated_call_is_a_typed_error_never_a_panic() {
        let wire = encode_request(&header(1, Some(4)), b"param", b"cell");
        let body = &wire[4..];
        for cut in 0..body.len() {
            let mut frame = Bytes::copy_from_slice(&body[..cut]);
            let result = take_request_header(&mut frame).and_then(|h| split_request_body(&h, frame));
            assert!(
                matches!(result, Err(WireError::Truncated { .. } | WireError::Protobuf { .. })),
                "cut at {cut}: {result:?}"
            );
        }
        // A frame whose stream ends early.
        let r = read_frame(&mut &wire[..wire.len() - 1], DEFAULT_MAX_REQUEST_SIZE);
        assert!(matches!(r, Err(WireError::Truncated { what: "frame", .. })), "{r:?}");
        let r = read_frame(&mut &wire[..2], DEFAULT_MAX_REQUEST_SIZE);
        assert!(matches!(r, Err(WireError::Truncated { what: "frame length", .. })), "{r:?}");
    }

    #[test]
    fn hostile_lengths_are_refused_before_any_allocation() {
        // 4 GiB - 1 claimed: over the limit, refused from the length alone.
        let r = read_frame(&mut &[0xff, 0xff, 0xff, 0xff, 1, 2][..], DEFAULT_MAX_REQUEST_SIZE);
        assert!(matches!(r, Err(WireError::FrameTooLarge { length: 0xffff_ffff, .. })), "{r:?}");
        // Under the limit but absent: reads what comes, then reports it.
        let r = read_frame(&mut &[0x0f, 0xff, 0xff, 0xff, 1, 2][..], DEFAULT_MAX_REQUEST_SIZE);
        assert!(matches!(r, Err(WireError::Truncated { have: 2, .. })), "{r:?}");
        // A delimiter claiming more than the frame holds.
        let mut frame = Bytes::from_static(&[0xff, 0xff, 0xff, 0x7f, 0]);
        assert!(matches!(
            take_request_header(&mut frame),
            Err(WireError::Truncated { need: 268_435_455, have: 1, .. })
        ));
        // A varint longer than ten bytes.
        let mut frame = Bytes::from_static(&[0xff; 12]);
        assert!(matches!(take_request_header(&mut frame), Err(WireError::Protobuf { .. })));
        // A cell block longer than the frame.
        let wire = encode_request(&header(1, Some(1000)), b"p", b"short");
        let mut frame = Bytes::copy_from_slice(&wire[4..]);
        let h = take_request_header(&mut frame).unwrap();
        assert!(matches!(
            split_request_body(&h, frame),
            Err(WireError::Truncated { what: "request cell block", need: 1000, have: 5 })
        ));
    }

    #[test]
    fn the_connection_header_round_trips() {
        let h = ConnectionHeader {
            service_name: Some("ClientService".into()),
            cell_block_codec_class: Some("org.apache.hadoop.hbase.codec.KeyValueCodec".into()),
            ..Default::default()
        };
        let wire = encode_connection_header(&h);
        let frame = read_frame(&mut &wire[..], 1024).unwrap().unwrap();
        assert_eq!(decode_connection_header(frame).unwrap(), h);
        assert!(matches!(
            decode_connection_header(Bytes::from_static(&[0x12, 0x40, b'x'])),
            Err(WireError::Protobuf { what: "connection header", .. })
        ));
    }
}
