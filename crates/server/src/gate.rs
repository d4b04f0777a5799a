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
//! Thread safety: shared by every connection; the check is set once (before
//! or after the server starts) and is then read without locking.

use std::sync::OnceLock;

use thrift::protocol::{TInputProtocol, TMessageIdentifier, TMessageType, TOutputProtocol, TType};
use thrift::server::TProcessor;
use thrift::{ApplicationError, ApplicationErrorKind};

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
        let Some(why) = self.gate.refusal() else { return self.inner.process(i, o) };
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
