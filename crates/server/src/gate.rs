//! `ServingGate`: whether this server may answer Thrift calls now.
//!
//! A standalone server always may. In cluster mode the server may serve
//! only while it is a member of the cluster (its ZooKeeper lease is valid,
//! see `cluster::lease`): a server that was paused past its session timeout
//! may have had its regions given to another server, and must not answer a
//! call — least of all acknowledge a write — for them. While the gate is
//! closed every call is answered with a Thrift application exception that
//! says why, and the call is not run.
//!
//! The gate is asked twice: before a call runs, and again once it has run
//! (its WAL sync done) and before its answer leaves ([`AckGate`]). A server
//! paused between the two — after the first check, before the answer —
//! whose session expired meanwhile may have written to a WAL that another
//! server has already split: its answer is withheld and the connection
//! closed, so that write is never acknowledged (the client sees the call's
//! outcome as unknown, and retries, as with any lost connection).
//!
//! Thread safety: shared by every connection; the check is set once (before
//! or after the server starts) and is then read without locking.

use std::sync::OnceLock;

use thrift::protocol::{
    TFieldIdentifier, TInputProtocol, TListIdentifier, TMapIdentifier, TMessageIdentifier, TMessageType,
    TOutputProtocol, TSetIdentifier, TStructIdentifier, TType,
};
use thrift::server::TProcessor;
use thrift::{ApplicationError, ApplicationErrorKind, TransportError, TransportErrorKind};

/// The start of the error an answer withheld by the gate ends its
/// connection with (see [`is_withheld`]).
const WITHHELD: &str = "answer withheld: ";

/// Whether `e` is an answer the gate withheld: the connection must close
/// without sending what was buffered.
pub fn is_withheld(e: &thrift::Error) -> bool {
    matches!(e, thrift::Error::Transport(t) if t.message.starts_with(WITHHELD))
}

/// `None` if calls may be served, else why not.
type Check = Box<dyn Fn() -> Option<String> + Send + Sync>;

#[derive(Default)]
pub struct ServingGate {
    check: OnceLock<Check>,
}

impl ServingGate {
    /// Installs the check (once; a second call is ignored and returns false).
    pub fn set(&self, check: impl Fn() -> Option<String> + Send + Sync + 'static) -> bool {
        self.check.set(Box::new(check)).is_ok()
    }

    /// Why calls may not be served now, if they may not.
    pub fn refusal(&self) -> Option<String> {
        self.check.get().and_then(|c| c())
    }
}

/// A processor that consults the gate before each call.
pub struct GatedProcessor<P> {
    pub inner: P,
    pub gate: std::sync::Arc<ServingGate>,
}

impl<P: TProcessor> TProcessor for GatedProcessor<P> {
    fn process(&self, i: &mut dyn TInputProtocol, o: &mut dyn TOutputProtocol) -> thrift::Result<()> {
        let Some(why) = self.gate.refusal() else {
            return self.inner.process(i, &mut AckGate { out: o, gate: &self.gate, withheld: None });
        };
        let call = i.read_message_begin()?;
        i.skip(TType::Struct)?;
        i.read_message_end()?;
        tracing::warn!(call = %call.name, reason = %why, "refused a call");
        let error = ApplicationError::new(ApplicationErrorKind::InternalError, why);
        o.write_message_begin(&TMessageIdentifier::new(call.name, TMessageType::Exception, call.sequence_number))?;
        thrift::Error::write_application_error_to_out_protocol(&error, o)?;
        o.write_message_end()?;
        o.flush()
    }
}

/// The answer's protocol: everything passes through, but the answer leaves
/// (`flush`) only if the gate is still open after the call ran. Once it
/// withholds an answer it latches: every later write fails too, so neither
/// the exception the processor then writes (which could overflow the
/// transport's buffer and send the withheld bytes with it) nor a second
/// flush (after the lease came back) sends anything.
struct AckGate<'a> {
    out: &'a mut dyn TOutputProtocol,
    gate: &'a ServingGate,
    withheld: Option<String>,
}

impl AckGate<'_> {
    fn open(&self) -> thrift::Result<()> {
        match &self.withheld {
            None => Ok(()),
            Some(why) => Err(withheld(why)),
        }
    }
}

fn withheld(why: &str) -> thrift::Error {
    thrift::Error::Transport(TransportError::new(TransportErrorKind::Unknown, format!("{WITHHELD}{why}")))
}

impl TOutputProtocol for AckGate<'_> {
    fn flush(&mut self) -> thrift::Result<()> {
        self.open()?;
        if let Some(why) = self.gate.refusal() {
            tracing::error!(reason = %why, "withheld the answer of a call that ran while the gate closed");
            let e = withheld(&why);
            self.withheld = Some(why);
            return Err(e);
        }
        self.out.flush()
    }

    fn write_message_begin(&mut self, identifier: &TMessageIdentifier) -> thrift::Result<()> {
        self.open()?;
        self.out.write_message_begin(identifier)
    }
    fn write_message_end(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_message_end()
    }
    fn write_struct_begin(&mut self, identifier: &TStructIdentifier) -> thrift::Result<()> {
        self.open()?;
        self.out.write_struct_begin(identifier)
    }
    fn write_struct_end(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_struct_end()
    }
    fn write_field_begin(&mut self, identifier: &TFieldIdentifier) -> thrift::Result<()> {
        self.open()?;
        self.out.write_field_begin(identifier)
    }
    fn write_field_end(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_field_end()
    }
    fn write_field_stop(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_field_stop()
    }
    fn write_bool(&mut self, b: bool) -> thrift::Result<()> {
        self.open()?;
        self.out.write_bool(b)
    }
    fn write_bytes(&mut self, b: &[u8]) -> thrift::Result<()> {
        self.open()?;
        self.out.write_bytes(b)
    }
    fn write_i8(&mut self, i: i8) -> thrift::Result<()> {
        self.open()?;
        self.out.write_i8(i)
    }
    fn write_i16(&mut self, i: i16) -> thrift::Result<()> {
        self.open()?;
        self.out.write_i16(i)
    }
    fn write_i32(&mut self, i: i32) -> thrift::Result<()> {
        self.open()?;
        self.out.write_i32(i)
    }
    fn write_i64(&mut self, i: i64) -> thrift::Result<()> {
        self.open()?;
        self.out.write_i64(i)
    }
    fn write_double(&mut self, d: f64) -> thrift::Result<()> {
        self.open()?;
        self.out.write_double(d)
    }
    fn write_uuid(&mut self, uuid: &uuid::Uuid) -> thrift::Result<()> {
        self.open()?;
        self.out.write_uuid(uuid)
    }
    fn write_string(&mut self, s: &str) -> thrift::Result<()> {
        self.open()?;
        self.out.write_string(s)
    }
    fn write_list_begin(&mut self, identifier: &TListIdentifier) -> thrift::Result<()> {
        self.open()?;
        self.out.write_list_begin(identifier)
    }
    fn write_list_end(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_list_end()
    }
    fn write_set_begin(&mut self, identifier: &TSetIdentifier) -> thrift::Result<()> {
        self.open()?;
        self.out.write_set_begin(identifier)
    }
    fn write_set_end(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_set_end()
    }
    fn write_map_begin(&mut self, identifier: &TMapIdentifier) -> thrift::Result<()> {
        self.open()?;
        self.out.write_map_begin(identifier)
    }
    fn write_map_end(&mut self) -> thrift::Result<()> {
        self.open()?;
        self.out.write_map_end()
    }
    fn write_byte(&mut self, b: u8) -> thrift::Result<()> {
        self.open()?;
        self.out.write_byte(b)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
    use thrift::transport::TBufferedWriteTransport;

    use super::*;

    /// What reached the socket.
    #[derive(Clone, Default)]
    struct Wire(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Wire {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("wire").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A call that "writes" (flips `ran`), while which the lease lapses if
    /// `lapse` is set (a pause between the gate's first check and the
    /// answer), then answers — almost 4 KiB, nearly filling the buffered
    /// transport — and flushes as a generated processor does; when that
    /// fails it writes an exception and flushes again, as thrift's
    /// `handle_process_result` does, after the lease came back.
    struct Call {
        ran: Arc<AtomicBool>,
        lapse: bool,
        lapsed: Arc<AtomicBool>,
    }

    impl TProcessor for Call {
        fn process(&self, i: &mut dyn TInputProtocol, o: &mut dyn TOutputProtocol) -> thrift::Result<()> {
            let call = i.read_message_begin()?;
            i.skip(TType::Struct)?;
            i.read_message_end()?;
            self.ran.store(true, Ordering::SeqCst);
            if self.lapse {
                self.lapsed.store(true, Ordering::SeqCst);
            }
            let id = TMessageIdentifier::new(call.name.clone(), TMessageType::Reply, call.sequence_number);
            o.write_message_begin(&id)?;
            o.write_struct_begin(&TStructIdentifier::new("ok"))?;
            o.write_field_begin(&TFieldIdentifier::new("value", TType::String, 0))?;
            o.write_string(&"v".repeat(4000))?;
            o.write_field_end()?;
            o.write_field_stop()?;
            o.write_struct_end()?;
            o.write_message_end()?;
            o.flush().inspect_err(|_| {
                self.lapsed.store(false, Ordering::SeqCst);
                let error = ApplicationError::new(ApplicationErrorKind::InternalError, "e".repeat(300));
                let id = TMessageIdentifier::new(call.name, TMessageType::Exception, call.sequence_number);
                let _ = o.write_message_begin(&id);
                let _ = thrift::Error::write_application_error_to_out_protocol(&error, o);
                let _ = o.write_message_end();
                let _ = o.flush();
            })
        }
    }

    fn request() -> Vec<u8> {
        let wire = Wire::default();
        let mut o = TBinaryOutputProtocol::new(TBufferedWriteTransport::new(wire.clone()), true);
        o.write_message_begin(&TMessageIdentifier::new("mutateRow", TMessageType::Call, 1)).expect("begin");
        o.write_struct_begin(&TStructIdentifier::new("args")).expect("struct");
        o.write_field_stop().expect("stop");
        o.write_struct_end().expect("end");
        o.write_message_end().expect("end");
        o.flush().expect("flush");
        wire.0.lock().expect("wire").clone()
    }

    fn run(lapse: bool) -> (thrift::Result<()>, bool, Vec<u8>) {
        let lapsed = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(ServingGate::default());
        let seen = lapsed.clone();
        gate.set(move || seen.load(Ordering::SeqCst).then(|| "lease expired".to_string()));
        let ran = Arc::new(AtomicBool::new(false));
        let processor = GatedProcessor { inner: Call { ran: ran.clone(), lapse, lapsed }, gate };
        let bytes = request();
        let mut i = TBinaryInputProtocol::new(bytes.as_slice(), true);
        let wire = Wire::default();
        let mut o = TBinaryOutputProtocol::new(TBufferedWriteTransport::new(wire.clone()), true);
        let result = processor.process(&mut i, &mut o);
        let sent = wire.0.lock().expect("wire").clone();
        (result, ran.load(Ordering::SeqCst), sent)
    }

    #[test]
    fn an_answer_leaves_while_the_gate_stays_open() {
        let (result, ran, sent) = run(false);
        assert!(result.is_ok(), "{result:?}");
        assert!(ran && !sent.is_empty());
    }

    #[test]
    fn a_call_during_which_the_gate_closed_is_not_acknowledged() {
        let (result, ran, sent) = run(true);
        let e = result.expect_err("withheld");
        assert!(is_withheld(&e), "{e:?}");
        assert!(ran, "the call ran (its write may be in the WAL) ...");
        assert!(sent.is_empty(), "... but its answer never left: {} bytes were sent", sent.len());
    }
}
