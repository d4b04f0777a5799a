//! What the server asks of the code behind it: [`RpcServices`], one method
//! that answers a [`Call`] with a [`Reply`] or an [`RpcError`], and one that
//! answers it at once when that needs no waiting.
//!
//! Services and methods are named as HBase names them: the connection
//! header's `service_name` (`ClientService`, `MasterService`,
//! `ClientMetaService`, `AdminService`, ...) and the request header's
//! `method_name` (`Get`, `Mutate`, `Scan`, `Multi`, `GetClusterId`, ...). The
//! request message arrives as encoded bytes, for the implementation to decode
//! into the generated type it expects ([`Call::decode`]).
//!
//! hbase-client 2.6's registry probe (the `Regist` preamble) arrives as a call
//! of [`CONNECTION_REGISTRY_SERVICE`].[`GET_CONNECTION_REGISTRY`] with an
//! empty message; answer a `GetConnectionRegistryResponse` with the cluster
//! id, or an error to make the client fall back as with an older server.
//!
//! Thread safety: the server calls `RpcServices::call` from its worker
//! threads, many calls at once, also several of one connection (the client
//! multiplexes its threads' calls over one connection), and
//! `RpcServices::answer_now` from each connection's reader thread, at the
//! same time as those; implementations are `Send + Sync` and synchronise
//! their own state.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use prost::Message;

use crate::cell::Cell;
use crate::cell_block::CellSource;
use crate::error::RpcError;

/// The service of the registry probe (`RegistryProtos.ConnectionRegistryService`).
pub const CONNECTION_REGISTRY_SERVICE: &str = "ConnectionRegistryService";
/// Its one method; the reply is a `GetConnectionRegistryResponse`.
pub const GET_CONNECTION_REGISTRY: &str = "GetConnectionRegistry";

/// One call, decoded from the wire.
#[derive(Debug, Clone)]
pub struct Call {
    /// The connection's service (from its connection header).
    pub service: Arc<str>,
    pub method: String,
    /// The encoded request message.
    pub param: Bytes,
    /// The cells of the request's cell block (empty when it has none).
    pub cells: Vec<Cell>,
    /// Whether the reply may carry cells in a cell block: the client named a
    /// codec. When false, cells belong inside the response message
    /// (e.g. `Result.cell`), as HBase's region server puts them.
    pub cell_block_supported: bool,
    /// The client's priority (0 normal, 200 high: meta and admin calls).
    pub priority: u32,
    /// How long the client waits for this call, when it said.
    pub timeout: Option<Duration>,
    /// The user the client claims (SIMPLE authentication: unverified).
    pub user: Option<String>,
    pub peer: SocketAddr,
}

impl Call {
    /// The request message as `M`; a malformed message is the client's
    /// error, and retrying it cannot help.
    pub fn decode<M: Message + Default>(&self) -> Result<M, RpcError> {
        M::decode(self.param.clone()).map_err(|e| {
            RpcError::do_not_retry(format!("{}.{}: malformed request message: {e}", self.service, self.method))
        })
    }
}

/// A call's answer: the encoded response message and the cells for the cell
/// block.
pub struct Reply {
    pub message: Vec<u8>,
    /// What the cell block is written from (wire cells, or the server's own
    /// form of them).
    pub cells: Box<dyn CellSource>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("message_bytes", &self.message.len())
            .field("cells", &self.cells.cell_count())
            .finish()
    }
}

impl Reply {
    pub fn new(message: &impl Message) -> Self {
        Self::with_cells(message, Vec::new())
    }

    /// A reply whose cells travel in the cell block; the message says how
    /// many belong to each result (e.g. `Result.associated_cell_count`).
    pub fn with_cells(message: &impl Message, cells: impl CellSource + 'static) -> Self {
        Self { message: message.encode_to_vec(), cells: Box::new(cells) }
    }
}

/// What [`RpcServices::answer_now`] made of a call.
pub enum Immediate {
    /// The call's answer (or error), found without waiting.
    Answered(Result<Reply, RpcError>),
    /// The call, handed back to run on a worker.
    Later(Call),
}

/// The services behind an [`crate::RpcServer`].
pub trait RpcServices: Send + Sync {
    /// Answers one call. An unknown service or method should be
    /// [`RpcError::not_implemented`].
    fn call(&self, call: Call) -> Result<Reply, RpcError>;

    /// Answers `call` on the connection's reader thread, if that can be
    /// done without waiting: no disk read, no peer, no lock held for long
    /// (e.g. a get whose cells are all in memory). Every later call of the
    /// connection waits while this runs, so anything that might wait must
    /// be handed back, and runs through [`Self::call`] on a worker.
    fn answer_now(&self, call: Call) -> Immediate {
        Immediate::Later(call)
    }
}
